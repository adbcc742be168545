package coordinator

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/llm"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/retrieval"
	"github.com/evalgate/evalgate/retriever"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/shard"
)

// Defaults of DistOptions.
const (
	DefaultShards         = 64
	DefaultPartBytes      = 1 << 20
	DefaultBufferBytes    = 64 << 20
	DefaultReconcileEvery = 30 * time.Second
	// MaxRepublishWait caps the wait between two re-publications of lost
	// tasks.
	MaxRepublishWait = 10 * time.Minute
)

// ErrJobNotFound is returned for an unknown job id.
var ErrJobNotFound = errors.New("coordinator: job not found")

// ErrTaskFailed wraps the failure of a task that makes a job fail.
var ErrTaskFailed = errors.New("task failed")

// ErrTimeout is returned when a job does not finish within its timeout.
var ErrTimeout = errors.New("job timed out")

// DistOptions configures a distributed job.
type DistOptions struct {
	// Shards is the number of hash partitions of the queries.
	Shards int
	// PartBytes is the target size of one task's rows before encoding
	// (at most BufferBytes).
	PartBytes int
	// BufferBytes bounds the rows the coordinator holds while it cuts the
	// input into tasks, whatever the shard count: when the rows waiting for
	// their shard's part to fill would exceed it, the shards with the most
	// waiting rows are published early (their parts are then smaller, and
	// a shard has more of them). Sizes are counted as shard.Rows.Size
	// does.
	BufferBytes int
	// Resume continues the job with this id instead of starting one.
	Resume string
	// Timeout fails the job if it has not finished after this long (0:
	// never), counted from TimeoutFrom (zero: when RunDistributed is
	// called), so a caller that waited for the queue can count that time.
	Timeout     time.Duration
	TimeoutFrom time.Time
	// ReconcileEvery is how often the coordinator checks that every task
	// without a result is still pending, and re-publishes lost ones.
	// Re-publishing reads the inputs again, so after each time the next one
	// waits at least twice as long as the last wait (starting at
	// ReconcileEvery, at most MaxRepublishWait).
	ReconcileEvery time.Duration
	// PublishConcurrency bounds the tasks encoded and published at once.
	PublishConcurrency int
	// Progress, if set, is called from the coordinator's goroutine after
	// every change.
	Progress func(Progress)
	// AfterPartial is a test hook called with the number of results
	// received so far.
	AfterPartial func(n int)
	// OnBuffered is a test hook called with the bytes of rows waiting in
	// the coordinator's buffers after each shard's rows of a unit are
	// added (and parts flushed).
	OnBuffered func(bytes int)
	// AfterPublish is a test hook called after each task is published (not
	// for tasks skipped because their result is stored) with whether the
	// queue enqueued it, from the publishing goroutines, concurrently.
	AfterPublish func(task string, enqueued bool)
	// Metrics, if set, receives what the coordinator reads and publishes,
	// for monitoring.
	Metrics Metrics
}

// Metrics receives what a coordinator reads and publishes, for monitoring
// (package internal/telemetry exports it as Prometheus metrics). Methods
// are called from the publishing goroutines too, concurrently, and must
// return quickly.
type Metrics interface {
	// InputRead is called when an input file (the gold set, the run, the
	// baseline run) has been read in full, with its size in bytes; a file
	// read again (to resume, to re-publish lost tasks) counts again.
	InputRead(bytes int64)
	// TaskPublished is called for each task the queue enqueued, with the
	// size of its payload in bytes.
	TaskPublished(bytes int)
}

// inputRead reports an input file read in full to the options' Metrics.
func (o DistOptions) inputRead(path string) {
	if o.Metrics == nil {
		return
	}
	if fi, err := os.Stat(path); err == nil {
		o.Metrics.InputRead(fi.Size())
	}
}

// Progress describes a running job.
type Progress struct {
	Job         string
	Tasks       int // 0 until every task is published
	TasksDone   int
	Queries     int64 // 0 until every task is published
	QueriesDone int64
	Workers     int
	Waiting     bool // no worker connected and nothing moving
}

func (o DistOptions) withDefaults() DistOptions {
	if o.Shards <= 0 {
		o.Shards = DefaultShards
	}
	if o.PartBytes <= 0 {
		o.PartBytes = DefaultPartBytes
	}
	if o.BufferBytes <= 0 {
		o.BufferBytes = DefaultBufferBytes
	}
	if o.ReconcileEvery <= 0 {
		o.ReconcileEvery = DefaultReconcileEvery
	}
	if o.PublishConcurrency <= 0 {
		o.PublishConcurrency = 4
	}
	return o
}

// NewJobID returns a fresh job id: a UTC timestamp and random bits, usable
// as a NATS subject token and a key.
func NewJobID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// TaskID names part p of shard s: "000003-0001", or "000003-r0001" in a
// job whose run was regrouped through spill files (Manifest.Regrouped).
// Tasks cut before the coordinator found the run interleaved are then
// abandoned, and their ids must differ from the ones cut again.
func TaskID(s shard.ID, part int, regrouped bool) string {
	if regrouped {
		return fmt.Sprintf("%s-r%04d", s, part)
	}
	return fmt.Sprintf("%s-%04d", s, part)
}

func jobConfig(job *Job, o DistOptions) JobConfig {
	c := JobConfig{
		GoldPath: job.Gold.Path, GoldFormat: job.Gold.Format.String(),
		RunPath: job.Run.Path, RunFormat: job.Run.Format.String(),
		Measures: metric.Names(job.Metric.Measures), RelLevel: job.Metric.RelLevel,
		RankBy: job.Ingest.RankBy.String(), Depth: job.Ingest.Depth, Strict: job.Ingest.Strict,
		SkipNoRelevant: job.Ingest.SkipNoRelevant, OnlyRunQueries: job.Ingest.OnlyRunQueries, JudgedOnly: job.Metric.JudgedOnly,
		Shards: o.Shards, PartBytes: o.PartBytes, BufferBytes: o.BufferBytes, PerQuery: job.PerQuery != nil,
		BaselinePath: job.Baseline.Path, BaselineFormat: job.Baseline.Format.String(),
		Paired: job.Metric.Paired, Pairing: pairingString(job.Metric.Pairing), CurveDepth: job.Metric.CurveDepth,
	}
	if r := job.Retriever; r != nil {
		c.RetrieverFile, c.RetrieverSource = r.Config.File, string(r.Config.Source)
		c.QueriesPerTask, c.MaxFailedQueries = r.queriesPerTask(), r.Failures.String()
	}
	if j := job.Judge; j != nil {
		c.LLMFile, c.LLMSource, c.Corpus, c.JudgeDepth = j.LLM.File, string(j.LLM.Source), j.Corpus, j.Depth
		c.Rejudge, c.JudgeSeed, c.MaxTokens, c.PairsPerTask = j.Rejudge, j.Seed, j.MaxTokens, j.pairsPerTask()
	}
	return c
}

func pairingString(p *metric.Pairing) string {
	if p == nil {
		return ""
	}
	return p.String()
}

// ApplyConfig sets the job and options from a stored configuration (for
// resuming a job).
func ApplyConfig(c JobConfig, job *Job, o *DistOptions) error {
	var err error
	job.Gold.Path, job.Run.Path = c.GoldPath, c.RunPath
	if job.Gold.Format, err = schema.ParseFormat(c.GoldFormat); err != nil {
		return err
	}
	if job.Run.Format, err = schema.ParseFormat(c.RunFormat); err != nil {
		return err
	}
	job.Retriever = nil
	if c.RetrieverSource != "" {
		// Read with this process's environment, as when the job started.
		cfg, err := retriever.Parse(c.RetrieverFile, []byte(c.RetrieverSource), os.LookupEnv)
		if err != nil {
			return err
		}
		budget, err := retrieval.ParseBudget(c.MaxFailedQueries)
		if err != nil {
			return err
		}
		job.Retriever = &Retriever{Config: cfg, QueriesPerTask: c.QueriesPerTask, Failures: budget}
	}
	job.Judge = nil
	if c.LLMSource != "" {
		cfg, err := llm.Parse(c.LLMFile, []byte(c.LLMSource), os.LookupEnv)
		if err != nil {
			return err
		}
		job.Judge = &Judge{LLM: cfg, Corpus: c.Corpus, Depth: c.JudgeDepth, Rejudge: c.Rejudge, Seed: c.JudgeSeed,
			MaxTokens: c.MaxTokens, PairsPerTask: c.PairsPerTask}
	}
	ms, err := metric.ParseList(c.Measures)
	if err != nil {
		return err
	}
	job.Metric = metric.Config{Measures: ms, RelLevel: c.RelLevel, Paired: c.Paired, CurveDepth: c.CurveDepth, JudgedOnly: c.JudgedOnly}
	if c.Pairing != "" {
		if job.Metric.Pairing, err = metric.ParsePairing(c.Pairing, ms); err != nil {
			return err
		}
	}
	job.Baseline.Path = c.BaselinePath
	if c.BaselinePath != "" {
		if job.Baseline.Format, err = schema.ParseFormat(c.BaselineFormat); err != nil {
			return err
		}
	}
	rb, err := ingest.ParseRankBy(c.RankBy)
	if err != nil {
		return err
	}
	job.Ingest.RelLevel, job.Ingest.RankBy, job.Ingest.Depth = c.RelLevel, rb, c.Depth
	job.Ingest.Strict, job.Ingest.SkipNoRelevant, job.Ingest.OnlyRunQueries = c.Strict, c.SkipNoRelevant, c.OnlyRunQueries
	job.Ingest.JudgedOnly = c.JudgedOnly
	o.Shards, o.PartBytes, o.BufferBytes = c.Shards, c.PartBytes, c.BufferBytes
	if o.BufferBytes <= 0 {
		// Recorded before the budget existed: parts were cut by PartBytes
		// alone, and must be cut the same way again.
		o.BufferBytes = math.MaxInt
	}
	return nil
}

// run is the state of one distributed job.
type run struct {
	job  *Job
	q    Queue
	o    DistOptions
	m    *Manifest
	gold *ingest.Gold
	base *ingest.Baseline

	headers   map[string]string
	judgePlan *judgePlan // a judge job's pairs, once cut
}

// RunDistributed evaluates a job through the queue: it publishes the shard
// parts as tasks, waits for every task's partial result, merges them and
// builds the summary — the same summary Score builds, bit for bit. With
// o.Resume it continues a job whose coordinator stopped: results already
// stored are reused, never scored again into the sum.
func RunDistributed(ctx context.Context, job Job, q Queue, o DistOptions) (*Outcome, error) {
	start := time.Now()
	o = o.withDefaults()
	r := &run{job: &job, q: q, o: o}
	// The timeout bounds the queue calls that set the job up as well.
	var deadline time.Time
	setup := ctx
	if o.Timeout > 0 {
		from := o.TimeoutFrom
		if from.IsZero() {
			from = start
		}
		deadline = from.Add(o.Timeout)
		var cancel context.CancelFunc
		setup, cancel = context.WithDeadline(ctx, deadline)
		defer cancel()
	}
	timedOut := func(err error) error {
		if ctx.Err() == nil && errors.Is(setup.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%w after %s: %w", ErrTimeout, o.Timeout, err)
		}
		return err
	}
	if err := r.openManifest(setup); err != nil {
		return nil, timedOut(err)
	}
	if err := job.Validate(); err != nil {
		return nil, err
	}
	r.headers = map[string]string{
		shard.HeaderMeasures: strings.Join(metric.Names(job.Metric.Measures), ","),
		shard.HeaderRelLevel: strconv.Itoa(int(job.Metric.RelLevel)),
	}
	if job.PerQuery != nil {
		r.headers[shard.HeaderPerQuery] = "1"
	}
	if job.Metric.Paired || job.Metric.Pairing != nil {
		r.headers[shard.HeaderPaired] = "1"
	}
	if job.Metric.Pairing != nil {
		r.headers[shard.HeaderPairing] = job.Metric.Pairing.String()
	}
	if job.Metric.CurveDepth > 0 {
		r.headers[shard.HeaderCurve] = strconv.Itoa(job.Metric.CurveDepth)
	}
	if job.Metric.JudgedOnly {
		r.headers[shard.HeaderJudgedOnly] = "1"
	}
	log := job.Logger.With().Str("component", "coordinator").Str("job", r.m.Job).Logger()
	log.Info().Bool("resume", o.Resume != "").Int("shards", r.o.Shards).Msg("job started")

	w, err := q.Watch(setup, r.m.Job)
	if err != nil {
		return nil, timedOut(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	l := newJobLoop(ctx, r, log, start, deadline)
	defer l.wg.Wait()
	defer cancel() // runs before the wait: stops the loop's goroutines
	l.watch(w)
	out, err := l.run()
	if err != nil || r.job.Fill == nil {
		return out, err
	}
	// The filled-in evaluation runs in this process: its values are the
	// same bits as through the queue, and scoring is cheap.
	if err := scoreFilled(ctx, *r.job, out, l.recs); err != nil {
		return nil, err
	}
	return out, nil
}

// taskFailed is the error of a job whose task failed for good.
func taskFailed(ev Event) error {
	msg := fmt.Sprintf("task %s (shard %s) failed", ev.Task, shardOf(ev.Task))
	if ev.Deliveries > 0 {
		msg += fmt.Sprintf(" after %d deliveries", ev.Deliveries)
	}
	if ev.Worker != "" {
		msg += " on worker " + ev.Worker
	}
	return fmt.Errorf("%w: %s: %s", ErrTaskFailed, msg, ev.Reason)
}

func taskCount(tasks map[string]int) string {
	if tasks == nil {
		return "(not yet known)"
	}
	return strconv.Itoa(len(tasks))
}

// shardOf returns the shard part of a task id.
func shardOf(task string) string {
	s, _, _ := strings.Cut(task, "-")
	return s
}

// openManifest creates the job's manifest, or loads it to resume.
func (r *run) openManifest(ctx context.Context) error {
	now := time.Now().UTC()
	if r.o.Resume == "" {
		r.m = &Manifest{Version: ManifestVersion, Job: NewJobID(), State: StateIngesting, Created: now, Updated: now,
			Config: jobConfig(r.job, r.o), HashAlgorithm: shard.HashAlgorithm}
		return r.q.PutManifest(ctx, r.m)
	}
	m, err := r.q.GetManifest(ctx, r.o.Resume)
	if err != nil {
		return err
	}
	switch {
	case m.Version != ManifestVersion:
		return fmt.Errorf("resume job %s: manifest version %d, this build writes %d", m.Job, m.Version, ManifestVersion)
	case m.HashAlgorithm != shard.HashAlgorithm:
		return fmt.Errorf("resume job %s: queries were partitioned with %s, this build uses %s", m.Job, m.HashAlgorithm, shard.HashAlgorithm)
	case m.State == StateFailed:
		return fmt.Errorf("resume job %s: it failed (%s); start a new job", m.Job, m.Error)
	}
	perQuery := r.job.PerQuery
	if err := ApplyConfig(m.Config, r.job, &r.o); err != nil {
		return fmt.Errorf("resume job %s: %w", m.Job, err)
	}
	if m.Config.PerQuery && perQuery == nil {
		return fmt.Errorf("resume job %s: it was started with --per-query; give it again", m.Job)
	}
	if !m.Config.PerQuery {
		r.job.PerQuery = nil
	}
	r.m = m
	return nil
}

func (r *run) tasksFromManifest() map[string]int {
	tasks := map[string]int{}
	for _, t := range r.m.TaskIDs() {
		tasks[t] = 0
	}
	return tasks
}

// published records the finished ingest in the manifest.
func (r *run) published(ctx context.Context, tasks map[string]int, res *ingest.Result) error {
	if res != nil { // a run file; a live retrieval's rankings are known at its end
		runDigest := digestString(res.RunDigest)
		if r.m.RunDigest != "" && r.m.RunDigest != runDigest {
			return fmt.Errorf("the run %s changed since job %s started (digest %s, was %s)", r.job.Run.Path, r.m.Job, runDigest, r.m.RunDigest)
		}
		st := res.Stats
		r.m.RunDigest, r.m.Stats = runDigest, &st
	}
	r.m.Parts = make([]int, r.o.Shards)
	r.m.Queries = 0
	for t, q := range tasks {
		s, _ := strconv.Atoi(shardOf(t))
		r.m.Parts[s]++
		r.m.Queries += int64(q)
	}
	r.m.State, r.m.Tasks, r.m.Updated = StatePublished, len(tasks), time.Now().UTC()
	return r.q.PutManifest(ctx, r.m)
}

// reconcile finds tasks that have no result, are not pending and did not
// fail: the queue lost them (a server that lost unsynced writes). Pending
// is checked before the result, because a worker stores the result before
// it acknowledges the task.
func (r *run) reconcile(ctx context.Context, tasks map[string]int, done map[string]bool) (map[string]bool, error) {
	missing := map[string]bool{}
	for t := range tasks {
		if done[t] {
			continue
		}
		pending, err := r.q.TaskPending(ctx, r.m.Job, t)
		if err != nil {
			return nil, err
		}
		if pending {
			continue
		}
		has, err := r.q.HasPartial(ctx, r.m.Job, t)
		if err != nil {
			return nil, err
		}
		if !has {
			missing[t] = true
		}
	}
	return missing, nil
}

// publishCounts counts what an ingest did with the tasks it cut.
type publishCounts struct {
	published int // tasks handed to the queue
	enqueued  int // ... of which the queue enqueued (the rest were pending already)
	reused    int // tasks skipped because their result is stored
}

// ingest reads the inputs and publishes the tasks (all of them, or only
// those in `only`, as re-publication `republish`), skipping tasks that
// already have a result when resuming or re-publishing. It returns every
// task of the job with its query count (the queries it scores, or, in a
// live retrieval, asks for) and, for a run file, the join's result.
func (r *run) ingest(ctx context.Context, only map[string]bool, republish int) (map[string]int, *ingest.Result, publishCounts, error) {
	if err := r.loadInputs(ctx); err != nil {
		return nil, nil, publishCounts{}, err
	}
	t0 := time.Now()
	defer func() { r.job.Logger.Info().Dur("took", time.Since(t0)).Msg("inputs read and tasks published") }()
	pub := newPublisher(ctx, r, r.o.Resume != "" || only != nil, republish)
	var tasks map[string]int
	var res *ingest.Result
	var err error
	switch {
	case r.job.Judge != nil:
		tasks, err = r.cutJudging(pub, only)
	case r.job.Retriever != nil:
		tasks, err = r.cutRetrieval(pub, only)
	default:
		tasks, res, err = r.cutRun(pub, only)
	}
	counts, perr := pub.close()
	if perr != nil {
		return nil, nil, publishCounts{}, perr
	}
	if err != nil {
		return nil, nil, publishCounts{}, err
	}
	return tasks, res, counts, nil
}

// loadInputs reads the gold set and the baseline run once per job,
// checking that they did not change since the job started.
func (r *run) loadInputs(ctx context.Context) error {
	if r.gold != nil {
		return nil
	}
	job := r.job
	t0 := time.Now()
	gold, err := loadGold(ctx, job, &fillCounts{}) // the filled-in evaluation runs in this process
	if err != nil {
		return err
	}
	if r.m.GoldDigest != "" && r.m.GoldDigest != gold.Digest() {
		return fmt.Errorf("the gold set %s changed since job %s started", job.Gold.Path, r.m.Job)
	}
	r.gold = gold
	r.o.inputRead(job.Gold.Path)
	job.Logger.Info().Int("queries", gold.NumQueries()).Dur("took", time.Since(t0)).Msg("gold set loaded")
	if r.base, err = loadBaseline(ctx, job, gold); err != nil {
		return err
	}
	if r.base != nil {
		r.o.inputRead(job.Baseline.Path)
		d := digestString(r.base.Result.RunDigest)
		if r.m.BaselineDigest != "" && r.m.BaselineDigest != d {
			return fmt.Errorf("the baseline run %s changed since job %s started", job.Baseline.Path, r.m.Job)
		}
		st := r.base.Result.Stats
		r.m.BaselineDigest, r.m.BaselineStats = d, &st
	}
	if r.m.GoldDigest == "" {
		r.m.GoldDigest = gold.Digest()
		return r.q.PutManifest(ctx, r.m)
	}
	return nil
}

// cutRun joins the run file with the gold set and cuts the joined rows
// into tasks, shard by shard.
//
// Rows are split by shard while the units are built (in parallel); here
// they are copied out of the unit and wait per shard until a part is full.
// The waiting rows of all shards never exceed the buffer budget: before
// rows are added, the shards with the most waiting rows are published
// early until the new rows fit. Every decision depends only on the input
// and the configuration, so reading the input again (to resume, or to
// re-publish lost tasks) cuts the same tasks.
func (r *run) cutRun(pub *publisher, only map[string]bool) (map[string]int, *ingest.Result, error) {
	S := r.o.Shards
	budget := r.o.BufferBytes
	partBytes := min(r.o.PartBytes, budget)
	buf := newPartBuffer(S)
	counts := make([]int, S)
	tasks := map[string]int{}
	flush := func(s int) error {
		rows := buf.take(s)
		id := TaskID(shard.ID(s), counts[s], r.m.Regrouped)
		counts[s]++
		tasks[id] = rows.Len()
		if only != nil && !only[id] {
			return nil
		}
		return pub.send(id, rows.Len(), r.headers, func() ([]byte, error) { return shard.Encode(rows) })
	}
	buffered := func() {
		if r.o.OnBuffered != nil {
			r.o.OnBuffered(buf.total)
		}
	}
	handlers := ingest.Handlers{Commit: func(u *ingest.Unit) error {
		for i := range u.Routed {
			s, rows := u.Routed[i].Route, &u.Routed[i].Rows
			for add := rows.Size(); buf.total > budget-add && buf.total > 0; {
				if err := flush(buf.largest()); err != nil {
					return err
				}
			}
			buf.add(s, rows)
			if buf.size[s] >= partBytes {
				if err := flush(s); err != nil {
					return err
				}
			}
			buffered()
		}
		return nil
	}}
	job := *r.job
	job.Ingest.Route = func(qid string) int { return int(shard.Of(qid, S)) }
	job.Ingest.Routes = S
	job.Ingest.Baseline = r.base
	res, err := joinRun(pub.ctx, &job, r.gold, handlers, r.m.Regrouped)
	if err == nil {
		r.o.inputRead(job.Run.Path)
	}
	for s := 0; s < S && err == nil; s++ {
		if buf.rows[s] != nil {
			err = flush(s)
		}
	}
	return tasks, res, err
}

// publisher encodes and publishes tasks from PublishConcurrency goroutines.
type publisher struct {
	ctx       context.Context
	cancel    context.CancelFunc
	r         *run
	resuming  bool
	republish int
	parts     chan part
	wg        sync.WaitGroup

	mu     sync.Mutex
	err    error
	counts publishCounts
}

// part is one task to publish: its id, query count, headers and payload
// (encoded by the publishing goroutine).
type part struct {
	id      string
	queries int
	headers map[string]string
	encode  func() ([]byte, error)
}

func newPublisher(ctx context.Context, r *run, resuming bool, republish int) *publisher {
	ctx, cancel := context.WithCancel(ctx)
	p := &publisher{ctx: ctx, cancel: cancel, r: r, resuming: resuming, republish: republish,
		parts: make(chan part, r.o.PublishConcurrency)}
	for range r.o.PublishConcurrency {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for t := range p.parts {
				p.record(r.publish(ctx, t, resuming, republish))
			}
		}()
	}
	return p
}

func (p *publisher) record(skipped, enqueued bool, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case err != nil:
		if p.err == nil {
			p.err = err
		}
		p.cancel()
	case skipped:
		p.counts.reused++
	default:
		p.counts.published++
		if enqueued {
			p.counts.enqueued++
		}
	}
}

// send queues a task for publication; it fails once publishing failed or
// ctx is done.
func (p *publisher) send(id string, queries int, headers map[string]string, encode func() ([]byte, error)) error {
	select {
	case p.parts <- part{id: id, queries: queries, headers: headers, encode: encode}:
		return nil
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
}

// close waits for the queued tasks and returns the counts, or the first
// publishing error.
func (p *publisher) close() (publishCounts, error) {
	close(p.parts)
	p.wg.Wait()
	p.cancel()
	return p.counts, p.err
}

// joinRun streams the run through the joiner, or, once the job knows its
// run is interleaved (regrouped), regroups it through spill files. A
// streamed join of an interleaved run ends with ingest.ErrRunNotGrouped
// after some of its tasks may have been published: the caller abandons
// them and starts again, regrouped.
func joinRun(ctx context.Context, job *Job, gold *ingest.Gold, h ingest.Handlers, regrouped bool) (*ingest.Result, error) {
	opts := job.Read
	opts.Format = job.Run.Format
	opts.ReuseMemory = true // the join keeps nothing of a released batch
	opts.SkipRanks = job.Ingest.RankBy == ingest.RankByScore
	rd, err := schema.Open(ctx, job.Run.Path, schema.RoleRun, opts)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	j := ingest.NewJoiner(gold, job.Ingest)
	if regrouped {
		return j.JoinSpilled(ctx, rd, h)
	}
	return j.Join(ctx, rd, h)
}

// publish encodes and publishes one task, unless resuming and its result
// is already stored (skipped). enqueued reports whether the queue enqueued
// it (see Queue.PublishTask).
func (r *run) publish(ctx context.Context, t part, resuming bool, republish int) (skipped, enqueued bool, err error) {
	if resuming {
		has, err := r.q.HasPartial(ctx, r.m.Job, t.id)
		if err != nil {
			return false, false, err
		}
		if has {
			return true, false, nil
		}
	}
	payload, err := t.encode()
	if err != nil {
		return false, false, err
	}
	hdr := make(map[string]string, len(t.headers)+1)
	for k, v := range t.headers {
		hdr[k] = v
	}
	hdr[shard.HeaderQueries] = strconv.Itoa(t.queries)
	enqueued, err = r.q.PublishTask(ctx, TaskSpec{Job: r.m.Job, ID: t.id, Payload: payload, Digest: shard.Digest(payload),
		Queries: t.queries, Headers: hdr, Republish: republish})
	if err != nil {
		return false, false, err
	}
	if r.o.AfterPublish != nil {
		r.o.AfterPublish(t.id, enqueued)
	}
	if r.o.Metrics != nil && enqueued {
		r.o.Metrics.TaskPublished(len(payload))
	}
	return false, enqueued, nil
}

// writePerQuery writes the collected per-query rows in input order.
func writePerQuery(job *Job, rows []metric.PerQueryRows) error {
	type ref struct {
		seq  int64
		part int
		row  int
	}
	var refs []ref
	for p, pq := range rows {
		for i, s := range pq.Seq {
			refs = append(refs, ref{s, p, i})
		}
	}
	slices.SortFunc(refs, func(a, b ref) int { return cmp.Compare(a.seq, b.seq) })
	w, err := job.PerQuery()
	if err != nil {
		return err
	}
	defer w.Abort()
	m := len(job.Metric.Measures)
	for _, rf := range refs {
		pq := rows[rf.part]
		if err := w.Write(pq.QueryID[rf.row], pq.Values[rf.row*m:(rf.row+1)*m]); err != nil {
			return err
		}
	}
	return w.Commit()
}

// workersOf is the worker count a summary reports: the workers whose
// results were merged, or, when results carry no worker names, the last
// count of connected workers.
func workersOf(contributors map[string]bool, connected int) int {
	if len(contributors) > 0 {
		return len(contributors)
	}
	return connected
}
