package coordinator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/retrieval"
	"github.com/evalgate/evalgate/retriever"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/shard"
	"github.com/evalgate/evalgate/summary"
)

// FormatRetriever is the run format a summary names for a live retrieval.
const FormatRetriever = "retriever"

// DefaultQueriesPerTask is the number of gold queries of a retrieve task.
const DefaultQueriesPerTask = 32

// ErrQueriesFailed is returned when more queries got no answer from the
// retriever than the job allows.
var ErrQueriesFailed = errors.New("retriever queries failed")

// Retriever makes a job a live retrieval: every gold query is sent to the
// retriever under test during the job, and its answer (the list order of
// the hits) is the query's ranking.
type Retriever struct {
	// Config is the retriever file, parsed with this process's
	// environment (and best probed before the job starts).
	Config *retriever.Config
	// QueriesPerTask is the number of gold queries per task (default
	// DefaultQueriesPerTask).
	QueriesPerTask int
	// Failures is how many queries may get no answer before the job
	// fails; allowed failures score 0 and are listed in the summary.
	Failures retrieval.Budget
	// Limiter, if set, replaces the client's own rate limit in a job run
	// in this process.
	Limiter retriever.Limiter
}

func (r *Retriever) queriesPerTask() int {
	if r.QueriesPerTask > 0 {
		return r.QueriesPerTask
	}
	return DefaultQueriesPerTask
}

// steps is the number of requests a query takes when none is retried.
func (r *Retriever) steps() int {
	if r.Config.HasEmbed() {
		return 2
	}
	return 1
}

// checkQueryTexts refuses a gold set with a query the retriever cannot be
// asked: one without text.
func checkQueryTexts(job *Job, gold *ingest.Gold) error {
	var missing []string
	n := 0
	for gi := range int32(gold.NumQueries()) {
		if gold.QueryText(gi) == "" {
			if n < 5 {
				missing = append(missing, strconv.Quote(gold.QueryID(gi)))
			}
			n++
		}
	}
	if n == 0 {
		return nil
	}
	more := ""
	if n > len(missing) {
		more = fmt.Sprintf(" and %d more", n-len(missing))
	}
	return &schema.InputError{File: job.Gold.Path, Field: schema.FieldQuery, Err: fmt.Errorf(
		"%w: %s has no query text (%s%s): a live retrieval sends each gold query's text to the retriever; use a gold set with query texts (JSONL \"query\")",
		schema.ErrMissingField, summary.Count(int64(n), "query", "queries"), strings.Join(missing, ", "), more)}
}

// probe sends the first gold query to the retriever before any task: a
// retriever file that does not fit the answers (no hit list at results, a
// hit without an id, a request the server refuses) stops the job here,
// exit code 2, naming the file's key, and an unreachable retriever stops
// it before any worker is busy.
func probe(ctx context.Context, job *Job, gold *ingest.Gold) error {
	if gold.NumQueries() == 0 {
		return nil
	}
	client, err := retriever.NewClient(job.Retriever.Config, retriever.ClientOptions{Limiter: job.Retriever.Limiter})
	if err != nil {
		return err
	}
	defer client.Close()
	_, err = client.Probe(ctx, retriever.Query{ID: gold.QueryID(0), Text: gold.QueryText(0), Tags: gold.Groups(0)})
	var qerr *retriever.QueryError
	if errors.As(err, &qerr) {
		return fmt.Errorf("%w: the retriever %s does not answer: %w", ErrQueriesFailed, job.Retriever.Config.File, err)
	}
	return err
}

// Probe checks a live retrieval job before it runs, as Score and the
// distributed job do when they start: every gold query has a text, and
// the retriever answers the first one in a way its file fits. It lets a
// caller that runs several jobs (compare) find a bad gold set or a
// retriever that does not answer before any job asks a retriever for every
// query. Errors are those of Score's start: a *schema.InputError naming
// the file, line and key for what a fix of the file or the gold set
// cures, ErrQueriesFailed for a retriever that gives no answer.
func Probe(ctx context.Context, job Job) error {
	if job.Retriever == nil {
		return errors.New("job: probe a job without a retriever")
	}
	if err := job.Validate(); err != nil {
		return err
	}
	gold, err := loadHumanGold(ctx, &job) // filled-in judgments change no query text
	if err != nil {
		return err
	}
	if err := checkQueryTexts(&job, gold); err != nil {
		return err
	}
	return probe(ctx, &job, gold)
}

// retrieveTask builds the task of the given gold queries.
func retrieveTask(job *Job, gold *ingest.Gold, base *ingest.Baseline, queries []int32) *retrieval.Task {
	t := &retrieval.Task{
		RetrieverFile: job.Retriever.Config.File, Retriever: string(job.Retriever.Config.Source),
		RelLevel: job.Ingest.RelLevel, Depth: job.Ingest.Depth,
		SkipNoRelevant: job.Ingest.SkipNoRelevant, OnlyRunQueries: job.Ingest.OnlyRunQueries,
		JudgedOnly: job.Ingest.JudgedOnly, Paired: base != nil, FailedSeq: int64(gold.NumQueries()),
		Queries: make([]retrieval.Query, len(queries)),
	}
	for i, gi := range queries {
		q := retrieval.Query{Seq: int64(gi), ID: gold.QueryID(gi), Text: gold.QueryText(gi), Groups: gold.Groups(gi),
			Grades: gold.Grades(gi)}
		q.Judged = make([]string, len(q.Grades))
		for j := range q.Judged {
			q.Judged[j] = gold.Doc(gi, j)
		}
		if base != nil {
			q.Baseline = base.Ranking(nil, gi)
		}
		t.Queries[i] = q
	}
	return t
}

// cutRetrieval cuts the gold queries into retrieve tasks and publishes
// them: by shard (a stable hash of the query id), in gold order within a
// shard, QueriesPerTask per task. The cut depends only on the gold set and
// the configuration, so a resumed job cuts the same tasks.
func (r *run) cutRetrieval(pub *publisher, only map[string]bool) (map[string]int, error) {
	if err := checkQueryTexts(r.job, r.gold); err != nil {
		return nil, err
	}
	if err := probe(pub.ctx, r.job, r.gold); err != nil {
		return nil, err
	}
	S, per := r.o.Shards, r.job.Retriever.queriesPerTask()
	headers := map[string]string{shard.HeaderKind: shard.KindRetrieve}
	for k, v := range r.headers {
		headers[k] = v
	}
	pending := make([][]int32, S)
	counts := make([]int, S)
	tasks := map[string]int{}
	flush := func(s int) error {
		queries := pending[s]
		pending[s] = nil
		id := TaskID(shard.ID(s), counts[s], false)
		counts[s]++
		tasks[id] = len(queries)
		if only != nil && !only[id] {
			return nil
		}
		t := retrieveTask(r.job, r.gold, r.base, queries)
		return pub.send(id, len(queries), headers, t.MarshalBinary)
	}
	for gi := range int32(r.gold.NumQueries()) {
		s := int(shard.Of(r.gold.QueryID(gi), S))
		pending[s] = append(pending[s], gi)
		if len(pending[s]) == per {
			if err := flush(s); err != nil {
				return nil, err
			}
		}
	}
	for s := range pending {
		if len(pending[s]) > 0 {
			if err := flush(s); err != nil {
				return nil, err
			}
		}
	}
	return tasks, nil
}

// liveResults merges the retrieval side of a live job's results and keeps
// its failure budget.
type liveResults struct {
	job    *Job
	totals *retrieval.Totals
	asked  int64 // queries of the job
}

func newLiveResults(job *Job, asked int64) *liveResults {
	return &liveResults{job: job, totals: retrieval.NewTotals(job.Retriever.steps()), asked: asked}
}

// merge decodes a retrieve task's result, merges its scores into res and
// its costs into the totals, and fails once more queries failed than
// allowed.
func (l *liveResults) merge(res *jobResults, data []byte) error {
	rr, err := retrieval.DecodeResult(data)
	if err != nil {
		return err
	}
	if rr.Score != nil {
		if err := res.mergeScore(rr.Score); err != nil {
			return err
		}
	}
	l.totals.Merge(rr)
	return l.checkBudget()
}

// checkBudget fails when more queries failed than the job allows.
func (l *liveResults) checkBudget() error {
	failed := l.totals.Failures()
	allowed := l.job.Retriever.Failures.Allowed(l.asked)
	if int64(len(failed)) <= allowed {
		return nil
	}
	f := failed[0]
	return fmt.Errorf("%w: %s of %d got no answer (allowed: %d; raise --max-failed-queries to score them 0): first, query %q: %s",
		ErrQueriesFailed, summary.Count(int64(len(failed)), "query", "queries"), l.asked, allowed, f.QueryID, f.Error)
}

// summary is the retrieval section of the job's summary.
func (l *liveResults) summary(gold *ingest.Gold) *summary.Retrieval {
	cfg := l.job.Retriever.Config
	return l.totals.Summary(summary.Input{Path: cfg.File, Format: FormatRetriever, Digest: "sha256:" + cfg.Digest()}, cfg.K,
		func(seq int64) []string { return gold.Groups(int32(seq)) })
}

// result is the join result a file of the retrieved rankings would give.
func (l *liveResults) result(gold *ingest.Gold) *ingest.Result {
	return &ingest.Result{Stats: l.totals.Stats(gold), RunDigest: l.totals.RunDigest()}
}

// liveRecords decodes a job's stored answers (each passed to each's fn)
// into records in gold order.
func liveRecords(gold *ingest.Gold, each func(fn func(data []byte) error) error) ([]*retrieval.Record, error) {
	type seqRec struct {
		seq int32
		rec *retrieval.Record
	}
	var recs []seqRec
	err := each(func(data []byte) error {
		r, err := retrieval.DecodeRecord(data)
		if err != nil {
			return err
		}
		gi := gold.Lookup(r.QueryID)
		if gi < 0 {
			return fmt.Errorf("%w: a stored answer for %q, which the gold set lacks", retrieval.ErrCorrupt, r.QueryID)
		}
		recs = append(recs, seqRec{gi, r})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the stored answers: %w", err)
	}
	slices.SortFunc(recs, func(a, b seqRec) int { return cmp.Compare(a.seq, b.seq) })
	out := make([]*retrieval.Record, len(recs))
	for i, r := range recs {
		out[i] = r.rec
	}
	return out, nil
}

// saveRun hands the records to the job's SaveRun.
func saveRun(job *Job, recs []*retrieval.Record) error {
	if job.SaveRun == nil {
		return nil
	}
	return job.SaveRun(job.Retriever.Config.File, recs)
}

// scoreLive runs a live retrieval in this process: the reference the
// distributed job is tested against (same rows, same sums), with the
// answers kept in memory and the rate limit of this process.
func scoreLive(ctx context.Context, job *Job, gold *ingest.Gold, base *ingest.Baseline, start time.Time) (*Outcome, []*retrieval.Record, error) {
	if err := checkQueryTexts(job, gold); err != nil {
		return nil, nil, err
	}
	if err := probe(ctx, job, gold); err != nil {
		return nil, nil, err
	}
	client, err := retriever.NewClient(job.Retriever.Config, retriever.ClientOptions{Limiter: job.Retriever.Limiter})
	if err != nil {
		return nil, nil, err
	}
	defer client.Close()
	answers := &retrieval.MemoryAnswers{}
	res := newJobResults(job.Metric)
	live := newLiveResults(job, int64(gold.NumQueries()))
	per := job.Retriever.queriesPerTask()
	var mu sync.Mutex
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	tasks := make(chan []int32)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) + 1 { // scoring overlaps the waits
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc, err := metric.NewScorer(job.Metric)
			if err != nil {
				cancel(err)
				return
			}
			for queries := range tasks {
				t := retrieveTask(job, gold, base, queries)
				id := strconv.Itoa(int(queries[0]))
				data, err := retrieval.Run(ctx, t, retrieval.Env{Client: client, Answers: answers.Task(id), Scorer: sc,
					PerQuery: job.PerQuery != nil})
				if err == nil {
					mu.Lock()
					err = live.merge(&res, data)
					mu.Unlock()
				}
				if err != nil {
					cancel(err)
				}
			}
		}()
	}
	for lo := 0; lo < gold.NumQueries() && ctx.Err() == nil; lo += per {
		queries := make([]int32, 0, per)
		for gi := lo; gi < min(lo+per, gold.NumQueries()); gi++ {
			queries = append(queries, int32(gi))
		}
		select {
		case tasks <- queries:
		case <-ctx.Done():
		}
	}
	close(tasks)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, nil, err
	}
	if job.PerQuery != nil {
		if err := writePerQuery(job, res.perQuery); err != nil {
			return nil, nil, err
		}
	}
	ir := live.result(gold)
	o := outcome{goldDigest: gold.Digest(), gold: gold, run: ir.Stats, runDigest: digestString(ir.RunDigest), partial: res.total,
		live: live.summary(gold)}
	if base != nil {
		o.base, o.baseDigest = &base.Result.Stats, digestString(base.Result.RunDigest)
	}
	s, err := buildSummary(job, o, execution("local", runtime.GOMAXPROCS(0), 0, "", start))
	if err != nil {
		return nil, nil, err
	}
	recs, err := liveRecords(gold, answers.Each)
	if err != nil {
		return nil, nil, err
	}
	if err := saveRun(job, recs); err != nil {
		return nil, nil, err
	}
	return &Outcome{Summary: s, Partial: res.total, Stats: ir.Stats}, recs, nil
}

// mergeScore merges an encoded shard result into the totals.
func (res *jobResults) mergeScore(data []byte) error {
	pq, err := metric.MergeShardResult(res.total, data, &res.scratch)
	if err != nil {
		return err
	}
	if pq != nil {
		res.perQuery = append(res.perQuery, *pq)
	}
	return nil
}
