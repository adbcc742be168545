package coordinator

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/internal/exact"
	"github.com/evalgate/evalgate/metric"
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

// TaskID names part p of shard s.
func TaskID(s shard.ID, part int) string { return fmt.Sprintf("%s-%04d", s, part) }

func jobConfig(job *Job, o DistOptions) JobConfig {
	return JobConfig{
		GoldPath: job.Gold.Path, GoldFormat: job.Gold.Format.String(),
		RunPath: job.Run.Path, RunFormat: job.Run.Format.String(),
		Measures: metric.Names(job.Metric.Measures), RelLevel: job.Metric.RelLevel,
		RankBy: job.Ingest.RankBy.String(), Depth: job.Ingest.Depth, Strict: job.Ingest.Strict,
		SkipNoRelevant: job.Ingest.SkipNoRelevant, OnlyRunQueries: job.Ingest.OnlyRunQueries,
		Shards: o.Shards, PartBytes: o.PartBytes, BufferBytes: o.BufferBytes, PerQuery: job.PerQuery != nil,
		BaselinePath: job.Baseline.Path, BaselineFormat: job.Baseline.Format.String(),
		Paired: job.Metric.Paired, Pairing: pairingString(job.Metric.Pairing), CurveDepth: job.Metric.CurveDepth,
	}
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
	ms, err := metric.ParseList(c.Measures)
	if err != nil {
		return err
	}
	job.Metric = metric.Config{Measures: ms, RelLevel: c.RelLevel, Paired: c.Paired, CurveDepth: c.CurveDepth}
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

	headers map[string]string
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
	log := job.Logger.With().Str("component", "coordinator").Str("job", r.m.Job).Logger()
	log.Info().Bool("resume", o.Resume != "").Int("shards", r.o.Shards).Msg("job started")

	w, err := q.Watch(setup, r.m.Job)
	if err != nil {
		return nil, timedOut(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan Event, 64)
	watchErr := make(chan error, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // runs before wg.Wait: stops the goroutines below
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			ev, err := w.Next(ctx)
			if err != nil {
				if ctx.Err() == nil {
					watchErr <- err
				}
				return
			}
			select {
			case events <- ev:
			case <-ctx.Done():
				return
			}
		}
	}()

	type ingestResult struct {
		tasks map[string]int // task -> queries
		res   *ingest.Result
		pub   publishCounts
		err   error
	}
	ingested := make(chan ingestResult, 1)
	startIngest := func(only map[string]bool, republish int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tasks, res, pub, err := r.ingest(ctx, only, republish)
			ingested <- ingestResult{tasks, res, pub, err}
		}()
	}
	if r.m.State == StateDone {
		// Everything was published and scored: the manifest has the task
		// list and the statistics; collect the stored results again.
		ingested <- ingestResult{tasks: nil}
	} else {
		startIngest(nil, 0)
	}

	total := metric.NewPartialFor(job.Metric)
	var scratch exact.Sum
	var perQuery []metric.PerQueryRows
	done := map[string]bool{}
	contributors := map[string]bool{} // workers whose results were merged
	var tasks map[string]int          // known once ingest finished
	var res *ingest.Result
	ingesting := true
	reingesting := false
	republished := 0                  // re-publications of lost tasks so far
	var nextRepublish time.Time       // not before: each reads the inputs again
	republishWait := o.ReconcileEvery // doubles after each re-publication
	progress := Progress{Job: r.m.Job}
	report := func() {
		if o.Progress != nil {
			o.Progress(progress)
		}
	}
	report()

	reconcile := time.NewTicker(o.ReconcileEvery)
	defer reconcile.Stop()
	waitTick := time.NewTicker(2 * time.Second)
	defer waitTick.Stop()
	var timeout <-chan time.Time
	if o.Timeout > 0 {
		t := time.NewTimer(max(time.Until(deadline), 0))
		defer t.Stop()
		timeout = t.C
	}
	lastMove := time.Now()

	fail := func(err error) (*Outcome, error) {
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer ccancel()
		r.m.State, r.m.Error, r.m.Done = StateFailed, err.Error(), len(done)
		if perr := q.PutManifest(cctx, r.m); perr != nil {
			log.Error().Err(perr).Msg("record failed job")
		}
		if perr := q.PurgeJob(cctx, r.m.Job); perr != nil {
			log.Error().Err(perr).Msg("purge failed job")
		}
		log.Error().Err(err).Msg("job failed")
		return nil, err
	}

	// Once every task has a result, the job is not done until the queue
	// has released every task: a worker that scores a task again (a
	// redelivery, a late ack) and finds a different result records a final
	// failure before it terminates the task, and that failure must fail
	// the job even when it comes after the last result.
	var settle *time.Timer
	settleWait := time.Duration(0)
	var settleLogged time.Time
loop:
	for {
		if settle == nil && !ingesting && tasks != nil && len(done) == len(tasks) {
			settle = time.NewTimer(0)
			defer settle.Stop()
			settleLogged = time.Now()
		}
		var settleC <-chan time.Time
		if settle != nil {
			settleC = settle.C
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case err := <-watchErr:
			return fail(fmt.Errorf("watch job results: %w", err))
		case ir := <-ingested:
			if ir.err != nil {
				return fail(ir.err)
			}
			ingesting = false
			if reingesting {
				reingesting = false
				nextRepublish = time.Now().Add(republishWait)
				republishWait = min(2*republishWait, max(MaxRepublishWait, o.ReconcileEvery))
				log.Info().Int("published", ir.pub.published).Int("enqueued", ir.pub.enqueued).
					Msg("lost tasks re-published")
				continue
			}
			log.Info().Int("published", ir.pub.published).Int("enqueued", ir.pub.enqueued).
				Int("results_reused", ir.pub.reused).Msg("tasks published")
			if ir.tasks == nil { // resumed a finished job
				tasks = r.tasksFromManifest()
				res = &ingest.Result{Stats: *r.m.Stats}
			} else {
				tasks, res = ir.tasks, ir.res
				if err := r.published(ctx, tasks, res); err != nil {
					return fail(err)
				}
			}
			for t := range done {
				if _, ok := tasks[t]; !ok {
					return fail(fmt.Errorf("result for task %s, which this job does not have: the queue holds results of another configuration", t))
				}
			}
			progress.Tasks = len(tasks)
			progress.Queries = r.m.Queries
			report()
		case ev := <-events:
			lastMove = time.Now()
			if ev.Dead {
				return fail(taskFailed(ev))
			}
			if done[ev.Task] {
				continue // the queue keeps one result per task; a repeat delivery of it is harmless
			}
			if tasks != nil {
				if _, ok := tasks[ev.Task]; !ok {
					return fail(fmt.Errorf("result for task %s, which this job does not have", ev.Task))
				}
			}
			before := int64(0)
			if g := total.Lookup(metric.Overall); g != nil {
				before = g.Queries
			}
			pq, err := metric.MergeShardResult(total, ev.Partial, &scratch)
			if err != nil {
				return fail(fmt.Errorf("merge result of task %s: %w", ev.Task, err))
			}
			if pq != nil {
				perQuery = append(perQuery, *pq)
			}
			if g := total.Lookup(metric.Overall); g != nil {
				progress.QueriesDone += g.Queries - before
			}
			done[ev.Task] = true
			if ev.Worker != "" {
				contributors[ev.Worker] = true
			}
			progress.TasksDone = len(done)
			progress.Waiting = false
			report()
			if o.AfterPartial != nil {
				o.AfterPartial(len(done))
			}
		case <-reconcile.C:
			if ingesting || tasks == nil {
				continue
			}
			missing, err := r.reconcile(ctx, tasks, done)
			if err != nil {
				log.Warn().Err(err).Msg("reconcile")
				continue
			}
			if len(missing) > 0 {
				if wait := time.Until(nextRepublish); wait > 0 {
					log.Debug().Int("tasks", len(missing)).Dur("wait", wait).Msg("tasks lost by the queue; re-publishing them later")
					continue
				}
				republished++
				log.Warn().Int("tasks", len(missing)).Int("republication", republished).
					Msg("tasks lost by the queue; reading the inputs again to re-publish them")
				ingesting, reingesting = true, true
				startIngest(missing, republished)
			}
		case <-waitTick.C:
			n, err := q.WorkerCount(ctx)
			if err == nil {
				progress.Workers = n
			}
			if err == nil && n == 0 && time.Since(lastMove) > 2*time.Second {
				progress.Waiting = true
				log.Warn().Msg("waiting for workers: none connected (start `evalgate worker --nats URL`)")
			}
			report()
		case <-settleC:
			st, err := q.Settlement(ctx, r.m.Job)
			if err != nil {
				log.Warn().Err(err).Msg("check that the queue released every task")
			} else {
				if len(st.Failures) > 0 {
					return fail(taskFailed(st.Failures[0]))
				}
				if st.Pending == 0 {
					break loop
				}
				if time.Since(settleLogged) >= 10*time.Second {
					log.Info().Int("tasks", st.Pending).
						Msg("every task has a result; waiting for workers to release the last tasks (an acknowledgement, or a redelivery after the ack wait)")
					settleLogged = time.Now()
				}
			}
			settleWait = min(max(2*settleWait, 20*time.Millisecond), time.Second)
			settle.Reset(settleWait)
		case <-timeout:
			n, _ := q.WorkerCount(ctx)
			return fail(fmt.Errorf("%w after %s: %d of %s tasks scored, %d workers connected", ErrTimeout, o.Timeout, len(done), taskCount(tasks), n))
		}
	}

	if got := total.Lookup(metric.Overall); got == nil && r.m.Queries > 0 || got != nil && got.Queries != r.m.Queries {
		n := int64(0)
		if got != nil {
			n = got.Queries
		}
		return fail(fmt.Errorf("results cover %d queries, the job has %d", n, r.m.Queries))
	}
	if job.PerQuery != nil {
		if err := writePerQuery(&job, perQuery); err != nil {
			return fail(err)
		}
	}
	s, err := buildSummary(&job, outcome{goldDigest: r.m.GoldDigest, gold: r.gold, run: res.Stats, runDigest: r.m.RunDigest,
		base: r.m.BaselineStats, baseDigest: r.m.BaselineDigest, partial: total},
		execution("distributed", workersOf(contributors, progress.Workers), r.o.Shards, r.m.Job, start))
	if err != nil {
		return fail(err)
	}
	r.m.State, r.m.Done, r.m.Updated = StateDone, len(done), time.Now().UTC()
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer ccancel()
	if err := q.PutManifest(cctx, r.m); err != nil {
		log.Warn().Err(err).Msg("record finished job")
	}
	if err := q.PurgeJob(cctx, r.m.Job); err != nil {
		log.Warn().Err(err).Msg("clean up job")
	}
	log.Info().Int("tasks", len(done)).Dur("took", time.Since(start)).Msg("job done")
	return &Outcome{Summary: s, Partial: total, Stats: res.Stats}, nil
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
	for s, n := range r.m.Parts {
		for p := 0; p < n; p++ {
			tasks[TaskID(shard.ID(s), p)] = 0
		}
	}
	return tasks
}

// published records the finished ingest in the manifest.
func (r *run) published(ctx context.Context, tasks map[string]int, res *ingest.Result) error {
	runDigest := digestString(res.RunDigest)
	if r.m.RunDigest != "" && r.m.RunDigest != runDigest {
		return fmt.Errorf("the run %s changed since job %s started (digest %s, was %s)", r.job.Run.Path, r.m.Job, runDigest, r.m.RunDigest)
	}
	r.m.Parts = make([]int, r.o.Shards)
	r.m.Queries = 0
	for t, q := range tasks {
		s, _ := strconv.Atoi(shardOf(t))
		r.m.Parts[s]++
		r.m.Queries += int64(q)
	}
	st := res.Stats
	r.m.State, r.m.Tasks, r.m.Stats, r.m.RunDigest, r.m.Updated = StatePublished, len(tasks), &st, runDigest, time.Now().UTC()
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
// task of the job with its query count.
func (r *run) ingest(ctx context.Context, only map[string]bool, republish int) (map[string]int, *ingest.Result, publishCounts, error) {
	job := r.job
	if r.gold == nil {
		t0 := time.Now()
		gold, err := loadGold(ctx, job)
		if err != nil {
			return nil, nil, publishCounts{}, err
		}
		if r.m.GoldDigest != "" && r.m.GoldDigest != gold.Digest() {
			return nil, nil, publishCounts{}, fmt.Errorf("the gold set %s changed since job %s started", job.Gold.Path, r.m.Job)
		}
		r.gold = gold
		job.Logger.Info().Int("queries", gold.NumQueries()).Dur("took", time.Since(t0)).Msg("gold set loaded")
		if r.base, err = loadBaseline(ctx, job, gold); err != nil {
			return nil, nil, publishCounts{}, err
		}
		if r.base != nil {
			d := digestString(r.base.Result.RunDigest)
			if r.m.BaselineDigest != "" && r.m.BaselineDigest != d {
				return nil, nil, publishCounts{}, fmt.Errorf("the baseline run %s changed since job %s started", job.Baseline.Path, r.m.Job)
			}
			st := r.base.Result.Stats
			r.m.BaselineDigest, r.m.BaselineStats = d, &st
		}
		if r.m.GoldDigest == "" {
			r.m.GoldDigest = gold.Digest()
			if err := r.q.PutManifest(ctx, r.m); err != nil {
				return nil, nil, publishCounts{}, err
			}
		}
	}
	resuming := r.o.Resume != "" || only != nil
	t0 := time.Now()
	defer func() { job.Logger.Info().Dur("took", time.Since(t0)).Msg("run ingested and published") }()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type part struct {
		id   string
		rows *shard.Rows
	}
	parts := make(chan part, r.o.PublishConcurrency)
	var pubErr error
	var pubCounts publishCounts
	var pubMu sync.Mutex
	var pwg sync.WaitGroup
	for i := 0; i < r.o.PublishConcurrency; i++ {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			for p := range parts {
				skipped, enqueued, err := r.publish(ctx, p.id, p.rows, resuming, republish)
				pubMu.Lock()
				switch {
				case err != nil:
					if pubErr == nil {
						pubErr = err
					}
					cancel()
				case skipped:
					pubCounts.reused++
				default:
					pubCounts.published++
					if enqueued {
						pubCounts.enqueued++
					}
				}
				pubMu.Unlock()
			}
		}()
	}

	// Rows are split by shard while the units are built (in parallel);
	// here they are copied out of the unit and wait per shard until a part
	// is full. The waiting rows of all shards never exceed the buffer
	// budget: before rows are added, the shards with the most waiting rows
	// are published early until the new rows fit. Every decision depends
	// only on the input and the configuration, so reading the input again
	// (to resume, or to re-publish lost tasks) cuts the same tasks.
	S := r.o.Shards
	budget := r.o.BufferBytes
	partBytes := min(r.o.PartBytes, budget)
	buf := newPartBuffer(S)
	counts := make([]int, S)
	tasks := map[string]int{}
	flush := func(s int) error {
		rows := buf.take(s)
		id := TaskID(shard.ID(s), counts[s])
		counts[s]++
		tasks[id] = rows.Len()
		if only != nil && !only[id] {
			return nil
		}
		select {
		case parts <- part{id: id, rows: rows}:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
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
	jobCopy := *job
	jobCopy.Ingest.Route = func(qid string) int { return int(shard.Of(qid, S)) }
	jobCopy.Ingest.Routes = S
	jobCopy.Ingest.Baseline = r.base
	job = &jobCopy
	res, err := joinRun(ctx, job, r.gold, handlers)
	for s := 0; s < S && err == nil; s++ {
		if buf.rows[s] != nil {
			err = flush(s)
		}
	}
	close(parts)
	pwg.Wait()
	if pubErr != nil {
		return nil, nil, publishCounts{}, pubErr
	}
	if err != nil {
		return nil, nil, publishCounts{}, err
	}
	return tasks, res, pubCounts, nil
}

// joinRun streams the run through the joiner, falling back to reading it
// whole when its queries are not grouped. Commit only routes rows, so a
// restart after ErrRunNotGrouped re-publishes nothing twice: task ids and
// contents are the same, and the queue keeps one task per id.
func joinRun(ctx context.Context, job *Job, gold *ingest.Gold, h ingest.Handlers) (*ingest.Result, error) {
	open := func() (schema.Reader, error) {
		opts := job.Read
		opts.Format = job.Run.Format
		return schema.Open(ctx, job.Run.Path, schema.RoleRun, opts)
	}
	rd, err := open()
	if err != nil {
		return nil, err
	}
	j := ingest.NewJoiner(gold, job.Ingest)
	res, err := j.Join(ctx, rd, h)
	rd.Close()
	if !errors.Is(err, ingest.ErrRunNotGrouped) {
		return res, err
	}
	return nil, fmt.Errorf("%w: in distributed mode the run must list each query's documents together (sort it by query id, or use `evalgate score`)", err)
}

// publish encodes and publishes one task, unless resuming and its result
// is already stored (skipped). enqueued reports whether the queue enqueued
// it (see Queue.PublishTask).
func (r *run) publish(ctx context.Context, id string, rows *shard.Rows, resuming bool, republish int) (skipped, enqueued bool, err error) {
	if resuming {
		has, err := r.q.HasPartial(ctx, r.m.Job, id)
		if err != nil {
			return false, false, err
		}
		if has {
			return true, false, nil
		}
	}
	payload, err := shard.Encode(rows)
	if err != nil {
		return false, false, err
	}
	hdr := make(map[string]string, len(r.headers)+1)
	for k, v := range r.headers {
		hdr[k] = v
	}
	hdr[shard.HeaderQueries] = strconv.Itoa(rows.Len())
	enqueued, err = r.q.PublishTask(ctx, TaskSpec{Job: r.m.Job, ID: id, Payload: payload, Digest: shard.Digest(payload),
		Queries: rows.Len(), Headers: hdr, Republish: republish})
	if err != nil {
		return false, false, err
	}
	if r.o.AfterPublish != nil {
		r.o.AfterPublish(id, enqueued)
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
