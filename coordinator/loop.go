package coordinator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/internal/exact"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/retrieval"
)

// jobLoop is the coordinator's event loop of one distributed job. It owns
// the merged results and the job's progress: the ingest (publishing the
// tasks) runs on its own goroutine and reports back on ingested, the
// queue's events arrive on events, and every method runs on the loop's
// goroutine.
type jobLoop struct {
	ctx      context.Context
	r        *run
	log      zerolog.Logger
	start    time.Time
	deadline time.Time // zero: no timeout
	wg       sync.WaitGroup

	events   chan Event
	watchErr chan error
	ingested chan ingestResult

	results  jobResults
	tasks    map[string]int // task -> queries; known once ingest finished
	res      *ingest.Result
	progress Progress
	lastMove time.Time

	ingesting, reingesting bool
	cancelIngest           context.CancelFunc
	// stopped is set once a judge job's token budget is spent: no task is
	// published or taken any more, and the job ends with what it has.
	stopped       bool
	republished   int           // re-publications of lost tasks so far
	nextRepublish time.Time     // not before: each reads the inputs again
	republishWait time.Duration // doubles after each re-publication

	// Once every task has a result, the job is not done until the queue
	// has released every task: a worker that scores a task again (a
	// redelivery, a late ack) and finds a different result records a
	// final failure before it terminates the task, and that failure must
	// fail the job even when it comes after the last result.
	settle       *time.Timer
	settleWait   time.Duration
	settleLogged time.Time

	recs []*retrieval.Record // a live retrieval's answers, for --save-run and the filled-in evaluation
}

// jobResults are the results merged so far.
type jobResults struct {
	total        *metric.Partial
	scratch      exact.Sum
	perQuery     []metric.PerQueryRows
	done         map[string]bool
	contributors map[string]bool // workers whose results were merged
	live         *liveResults    // a live retrieval's costs and failures
	judge        *judgeResults   // a judge job's judgments
}

func newJobResults(cfg metric.Config) jobResults {
	return jobResults{total: metric.NewPartialFor(cfg), done: map[string]bool{}, contributors: map[string]bool{}}
}

// newLoopResults returns the empty results of r's job.
func newLoopResults(r *run) jobResults {
	res := newJobResults(r.job.Metric)
	if r.job.Retriever != nil {
		res.live = newLiveResults(r.job, -1) // the query count is known once the tasks are
	}
	if r.job.Judge != nil {
		res.judge = &judgeResults{budget: r.job.Judge.MaxTokens}
	}
	return res
}

// queries is the number of queries the merged results cover.
func (res *jobResults) queries() int64 {
	switch {
	case res.live != nil:
		return res.live.totals.Queries()
	case res.judge != nil:
		return int64(len(res.judge.totals.Records))
	}
	if g := res.total.Lookup(metric.Overall); g != nil {
		return g.Queries
	}
	return 0
}

// ingestResult is what an ingest reports.
type ingestResult struct {
	tasks map[string]int // task -> queries; nil for a resumed finished job
	res   *ingest.Result
	pub   publishCounts
	err   error
}

func newJobLoop(ctx context.Context, r *run, log zerolog.Logger, start, deadline time.Time) *jobLoop {
	return &jobLoop{
		ctx: ctx, r: r, log: log, start: start, deadline: deadline,
		events:        make(chan Event, 64),
		watchErr:      make(chan error, 1),
		ingested:      make(chan ingestResult, 1),
		results:       newLoopResults(r),
		progress:      Progress{Job: r.m.Job},
		republishWait: r.o.ReconcileEvery,
	}
}

// watch forwards the watcher's events to the loop until ctx is done.
func (l *jobLoop) watch(w Watcher) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			ev, err := w.Next(l.ctx)
			if err != nil {
				if l.ctx.Err() == nil {
					l.watchErr <- err
				}
				return
			}
			select {
			case l.events <- ev:
			case <-l.ctx.Done():
				return
			}
		}
	}()
}

// startIngest publishes the job's tasks (all, or only those in `only` as
// re-publication `republish`) on a goroutine of its own.
func (l *jobLoop) startIngest(only map[string]bool, republish int) {
	l.ingesting = true
	ctx, cancel := context.WithCancel(l.ctx)
	l.cancelIngest = cancel
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer cancel()
		tasks, res, pub, err := l.r.ingest(ctx, only, republish)
		l.ingested <- ingestResult{tasks, res, pub, err}
	}()
}

// stopForBudget ends a judge job whose token budget is spent: publishing
// stops, the tasks not yet taken are purged, and the job settles with the
// results it has (tasks held by workers may still add theirs).
func (l *jobLoop) stopForBudget() {
	l.stopped = true
	if l.cancelIngest != nil {
		l.cancelIngest()
	}
	l.log.Warn().Int64("tokens", l.results.judge.totals.Tokens()).Int64("budget", l.results.judge.budget).
		Msg("token budget spent: stopping the job; the judgments made are kept")
	if err := l.r.q.PurgeJob(l.ctx, l.r.m.Job); err != nil {
		l.log.Warn().Err(err).Msg("purge the tasks not yet taken")
	}
}

func (l *jobLoop) report() {
	if l.r.o.Progress != nil {
		l.r.o.Progress(l.progress)
	}
}

// run runs the job to its end.
func (l *jobLoop) run() (*Outcome, error) {
	if l.r.m.State == StateDone {
		// Everything was published and scored: the manifest has the task
		// list and the statistics; collect the stored results again.
		l.ingesting = true
		l.ingested <- ingestResult{}
	} else {
		l.startIngest(nil, 0)
	}
	l.report()
	reconcile := time.NewTicker(l.r.o.ReconcileEvery)
	defer reconcile.Stop()
	waitTick := time.NewTicker(2 * time.Second)
	defer waitTick.Stop()
	var timeout <-chan time.Time
	if !l.deadline.IsZero() {
		t := time.NewTimer(max(time.Until(l.deadline), 0))
		defer t.Stop()
		timeout = t.C
	}
	defer func() {
		if l.settle != nil {
			l.settle.Stop()
		}
	}()
	l.lastMove = time.Now()
	for {
		if l.settle == nil && !l.ingesting && (l.stopped || l.tasks != nil && len(l.results.done) == len(l.tasks)) {
			l.settle = time.NewTimer(0)
			l.settleLogged = time.Now()
		}
		var settleC <-chan time.Time
		if l.settle != nil {
			settleC = l.settle.C
		}
		var err error
		select {
		case <-l.ctx.Done():
			return nil, l.ctx.Err()
		case err = <-l.watchErr:
			err = fmt.Errorf("watch job results: %w", err)
		case ir := <-l.ingested:
			err = l.onIngested(ir)
		case ev := <-l.events:
			err = l.onEvent(ev)
		case <-reconcile.C:
			l.onReconcile()
		case <-waitTick.C:
			l.onWaitTick()
		case <-settleC:
			var settled bool
			if settled, err = l.onSettle(); settled {
				return l.finish()
			}
		case <-timeout:
			n, _ := l.r.q.WorkerCount(l.ctx)
			err = fmt.Errorf("%w after %s: %d of %s tasks scored, %d workers connected",
				ErrTimeout, l.r.o.Timeout, len(l.results.done), taskCount(l.tasks), n)
		}
		if err != nil {
			return l.fail(err)
		}
	}
}

// onIngested handles the end of an ingest: the job's task list is known
// (or lost tasks were re-published, or the run turned out interleaved).
func (l *jobLoop) onIngested(ir ingestResult) error {
	r, log := l.r, l.log
	if errors.Is(ir.err, ingest.ErrRunNotGrouped) && !r.m.Regrouped && !l.reingesting {
		return l.regroup()
	}
	if l.stopped && errors.Is(ir.err, context.Canceled) {
		l.ingesting = false // stopped on purpose: the job ends with what it has
		return nil
	}
	if ir.err != nil {
		return ir.err
	}
	l.ingesting = false
	if l.reingesting {
		l.reingesting = false
		l.nextRepublish = time.Now().Add(l.republishWait)
		l.republishWait = min(2*l.republishWait, max(MaxRepublishWait, r.o.ReconcileEvery))
		log.Info().Int("published", ir.pub.published).Int("enqueued", ir.pub.enqueued).Msg("lost tasks re-published")
		return nil
	}
	log.Info().Int("published", ir.pub.published).Int("enqueued", ir.pub.enqueued).
		Int("results_reused", ir.pub.reused).Msg("tasks published")
	if ir.tasks == nil { // resumed a finished job
		l.tasks = r.tasksFromManifest()
		l.res = &ingest.Result{Stats: *r.m.Stats}
	} else {
		l.tasks, l.res = ir.tasks, ir.res
		if err := r.published(l.ctx, l.tasks, l.res); err != nil {
			return err
		}
	}
	for t := range l.results.done {
		if _, ok := l.tasks[t]; !ok {
			return fmt.Errorf("result for task %s, which this job does not have: the queue holds results of another configuration", t)
		}
	}
	l.progress.Tasks = len(l.tasks)
	l.progress.Queries = r.m.Queries
	l.report()
	if live := l.results.live; live != nil {
		live.asked = r.m.Queries
		return live.checkBudget()
	}
	return nil
}

// regroup starts the job again on the run regrouped through spill files:
// the streamed ingest found a query's lines in two places after it may
// have published tasks. Those tasks are purged from the queue and their
// results, merged or still to come, are dropped: the regrouped tasks have
// other ids (TaskID), so a late result of an abandoned task cannot take a
// new task's place.
func (l *jobLoop) regroup() error {
	r := l.r
	l.log.Info().Msg("the run lists some queries' documents in several places: reading it again through temporary files")
	r.m.Regrouped = true
	if err := r.q.PutManifest(l.ctx, r.m); err != nil {
		return err
	}
	if err := r.q.PurgeJob(l.ctx, r.m.Job); err != nil {
		return err
	}
	l.results = newLoopResults(r)
	l.progress = Progress{Job: r.m.Job, Workers: l.progress.Workers}
	l.report()
	l.startIngest(nil, 0)
	return nil
}

// onEvent merges a task's result, or fails the job on a final failure.
func (l *jobLoop) onEvent(ev Event) error {
	l.lastMove = time.Now()
	res := &l.results
	switch {
	case l.r.m.Abandoned(ev.Task):
		return nil // cut before the run was regrouped
	case ev.Dead:
		return taskFailed(ev)
	case res.done[ev.Task]:
		return nil // the queue keeps one result per task; a repeat delivery of it is harmless
	}
	if l.tasks != nil {
		if _, ok := l.tasks[ev.Task]; !ok {
			return fmt.Errorf("result for task %s, which this job does not have", ev.Task)
		}
	}
	before := res.queries()
	switch {
	case res.live != nil:
		if err := res.live.merge(res, ev.Partial); err != nil {
			return fmt.Errorf("result of task %s: %w", ev.Task, err)
		}
	case res.judge != nil:
		spent, err := res.judge.merge(ev.Partial)
		if err != nil {
			return fmt.Errorf("result of task %s: %w", ev.Task, err)
		}
		if spent && !l.stopped {
			l.stopForBudget()
		}
	default:
		if err := res.mergeScore(ev.Partial); err != nil {
			return fmt.Errorf("merge result of task %s: %w", ev.Task, err)
		}
	}
	l.progress.QueriesDone += res.queries() - before
	res.done[ev.Task] = true
	if ev.Worker != "" {
		res.contributors[ev.Worker] = true
	}
	l.progress.TasksDone = len(res.done)
	l.progress.Waiting = false
	l.report()
	if l.r.o.AfterPartial != nil {
		l.r.o.AfterPartial(len(res.done))
	}
	return nil
}

// onReconcile re-publishes tasks the queue lost, at most every
// republishWait.
func (l *jobLoop) onReconcile() {
	if l.ingesting || l.tasks == nil {
		return
	}
	missing, err := l.r.reconcile(l.ctx, l.tasks, l.results.done)
	if err != nil {
		l.log.Warn().Err(err).Msg("reconcile")
		return
	}
	if len(missing) == 0 {
		return
	}
	if wait := time.Until(l.nextRepublish); wait > 0 {
		l.log.Debug().Int("tasks", len(missing)).Dur("wait", wait).Msg("tasks lost by the queue; re-publishing them later")
		return
	}
	l.republished++
	l.log.Warn().Int("tasks", len(missing)).Int("republication", l.republished).
		Msg("tasks lost by the queue; reading the inputs again to re-publish them")
	l.reingesting = true
	l.startIngest(missing, l.republished)
}

// onWaitTick refreshes the worker count and warns when none is connected.
func (l *jobLoop) onWaitTick() {
	n, err := l.r.q.WorkerCount(l.ctx)
	if err == nil {
		l.progress.Workers = n
	}
	if err == nil && n == 0 && time.Since(l.lastMove) > 2*time.Second {
		l.progress.Waiting = true
		l.log.Warn().Msg("waiting for workers: none connected (start `evalgate worker --nats URL`)")
	}
	l.report()
}

// onSettle checks whether the queue released every task of the finished
// job; a final failure recorded meanwhile fails it.
func (l *jobLoop) onSettle() (settled bool, err error) {
	st, err := l.r.q.Settlement(l.ctx, l.r.m.Job)
	if err != nil {
		l.log.Warn().Err(err).Msg("check that the queue released every task")
	} else {
		for _, f := range st.Failures {
			if !l.r.m.Abandoned(f.Task) {
				return false, taskFailed(f)
			}
		}
		if st.Pending == 0 {
			return true, nil
		}
		if time.Since(l.settleLogged) >= 10*time.Second {
			l.log.Info().Int("tasks", st.Pending).
				Msg("every task has a result; waiting for workers to release the last tasks (an acknowledgement, or a redelivery after the ack wait)")
			l.settleLogged = time.Now()
		}
	}
	l.settleWait = min(max(2*l.settleWait, 20*time.Millisecond), time.Second)
	l.settle.Reset(l.settleWait)
	return false, nil
}

// fail records the job as failed and purges its tasks.
func (l *jobLoop) fail(err error) (*Outcome, error) {
	r := l.r
	cctx, cancel := context.WithTimeout(context.WithoutCancel(l.ctx), 10*time.Second)
	defer cancel()
	r.m.State, r.m.Error, r.m.Done = StateFailed, err.Error(), len(l.results.done)
	if perr := r.q.PutManifest(cctx, r.m); perr != nil {
		l.log.Error().Err(perr).Msg("record failed job")
	}
	if perr := r.q.PurgeJob(cctx, r.m.Job); perr != nil {
		l.log.Error().Err(perr).Msg("purge failed job")
	}
	// The caller reports err; logging it here too would print it twice.
	return nil, err
}

// finish builds the summary of a job whose every task has a result.
func (l *jobLoop) finish() (*Outcome, error) {
	r, res := l.r, &l.results
	if n := res.queries(); n != r.m.Queries && !l.stopped {
		return l.fail(fmt.Errorf("results cover %d queries, the job has %d", n, r.m.Queries))
	}
	if res.judge != nil {
		return l.finishJudge()
	}
	if r.job.PerQuery != nil {
		if err := writePerQuery(r.job, res.perQuery); err != nil {
			return l.fail(err)
		}
	}
	o := outcome{goldDigest: r.m.GoldDigest, gold: r.gold, runDigest: r.m.RunDigest,
		base: r.m.BaselineStats, baseDigest: r.m.BaselineDigest, partial: res.total}
	if res.live != nil {
		if err := l.finishLive(&o); err != nil {
			return l.fail(err)
		}
	} else {
		o.run = l.res.Stats
	}
	s, err := buildSummary(r.job, o, execution("distributed", workersOf(res.contributors, l.progress.Workers), r.o.Shards, r.m.Job, l.start))
	if err != nil {
		return l.fail(err)
	}
	r.m.State, r.m.Done, r.m.Updated = StateDone, len(res.done), time.Now().UTC()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(l.ctx), 10*time.Second)
	defer cancel()
	if err := r.q.PutManifest(cctx, r.m); err != nil {
		l.log.Warn().Err(err).Msg("record finished job")
	}
	if err := r.q.PurgeJob(cctx, r.m.Job); err != nil {
		l.log.Warn().Err(err).Msg("clean up job")
	}
	l.log.Info().Int("tasks", len(res.done)).Dur("took", time.Since(l.start)).Msg("job done")
	return &Outcome{Summary: s, Partial: res.total, Stats: o.run}, nil
}

// finishJudge ends a judge job: its judgments, failures and costs.
func (l *jobLoop) finishJudge() (*Outcome, error) {
	r := l.r
	if err := r.loadInputs(l.ctx); err != nil { // a resumed finished job has not read them
		return l.fail(err)
	}
	jo, err := l.results.judge.outcome(r.judgePlan, r.gold, r.job, l.stopped)
	if err != nil {
		return l.fail(err)
	}
	r.m.State, r.m.Done, r.m.Updated = StateDone, len(l.results.done), time.Now().UTC()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(l.ctx), 10*time.Second)
	defer cancel()
	if err := r.q.PutManifest(cctx, r.m); err != nil {
		l.log.Warn().Err(err).Msg("record finished job")
	}
	if err := r.q.PurgeJob(cctx, r.m.Job); err != nil {
		l.log.Warn().Err(err).Msg("clean up job")
	}
	l.log.Info().Int("tasks", len(l.results.done)).Dur("took", time.Since(l.start)).Msg("job done")
	return &Outcome{Judge: jo}, nil
}

// finishLive completes a live retrieval's outcome: the statistics and
// digest of the retrieved rankings, the retrieval section, and the saved
// run (read back from the stored answers).
func (l *jobLoop) finishLive(o *outcome) error {
	r, live := l.r, l.results.live
	if err := r.loadInputs(l.ctx); err != nil { // a resumed finished job has not read them
		return err
	}
	o.gold = r.gold
	ir := live.result(r.gold)
	o.run, o.runDigest, o.live = ir.Stats, digestString(ir.RunDigest), live.summary(r.gold)
	r.m.RunDigest, r.m.Stats = o.runDigest, &ir.Stats
	if r.job.SaveRun == nil && r.job.Fill == nil {
		return nil
	}
	recs, err := liveRecords(r.gold, func(fn func([]byte) error) error { return r.q.Answers(l.ctx, r.m.Job, fn) })
	if err != nil {
		return err
	}
	l.recs = recs
	return saveRun(r.job, recs)
}
