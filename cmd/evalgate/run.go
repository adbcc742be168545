package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/internal/crash"
	"github.com/evalgate/evalgate/internal/jsq"
	"github.com/evalgate/evalgate/perquery"
	"github.com/evalgate/evalgate/worker"
)

func runCommand() *cli.Command {
	flags := slices.Concat(jobFlags(), liveFlags(), fillFlags(), outputFlags(), gateFlags(), pairingFlags())
	flags = append(flags, natsFlags()...)
	flags = append(flags, topologyFlags()...)
	flags = append(flags, queueFlags("")...)
	flags = append(flags, &cli.IntFlag{Name: "part-bytes", Value: coordinator.DefaultPartBytes, Usage: "target size of one task's rows"})
	return &cli.Command{
		Name:  "run",
		Usage: "score a run through the work queue: embedded JetStream and in-process workers, or --nats to scale out",
		Description: "Without --nats, starts a JetStream server inside this process (no network listener), " +
			"N workers and the coordinator, scores and prints the same summary as `evalgate score`. " +
			"With --nats URL, acts as the coordinator of an external JetStream (workers run `evalgate worker`).",
		Flags:  flags,
		Action: runAction,
	}
}

func runAction(c *cli.Context) error {
	log, err := logger(c)
	if err != nil {
		return err
	}
	logFatalErrors(c)
	ctx := c.Context
	external := c.String("nats") != ""
	resume := c.String("resume")
	if resume != "" && !external {
		return usagef("--resume needs --nats: an embedded server's queue ends with the process")
	}
	if err := checkFileFlags(c); err != nil {
		return err
	}
	var job coordinator.Job
	if resume == "" {
		if job, err = jobFromFlags(c); err != nil {
			return err
		}
	} else {
		// The job's manifest holds all of these; a different value given
		// here would be silently ignored.
		for _, f := range []string{"gold", "run", "measure", "gold-format", "run-format", "rel-level", "depth", "rank-by",
			"skip-no-relevant", "only-run-queries", "strict", "judged-only", "shards", "part-bytes", "retriever", "max-failed-queries", "queries-per-task"} {
			if c.IsSet(f) {
				return usagef("--resume takes the inputs, measures and options from the job; do not give --%s", f)
			}
		}
	}
	out, err := outputsFromFlags(c)
	if err != nil {
		return err
	}
	defer out.cleanup()
	g, err := gatingFromFlags(c, c.String("baseline-run") != "")
	if err != nil {
		return err
	}
	if resume == "" {
		if err := pairedMetric(c, &job, g.criteria); err != nil {
			return err
		}
		if err := g.checkBaseline(&job); err != nil {
			return err
		}
	} else if c.IsSet("baseline-run") {
		return usagef("--resume takes the baseline run from the job; do not give --baseline-run")
	} else if job.Fill, err = fillFromFlags(c); err != nil {
		return err
	}
	job.Logger = log
	if c.String("per-query") != "" || c.Bool("q") {
		// The measures are known only after a resumed job's manifest is
		// read; the factory looks them up when called.
		job.PerQuery = func() (perquery.Writer, error) { return out.perQueryFactory(job.Metric.Measures)() }
	}
	out.attachSaveRun(&job)
	if c.Int("part-bytes") < 1 {
		return usagef("--part-bytes %d: want at least 1", c.Int("part-bytes"))
	}
	qs, err := openQueueSession(c, log)
	if err != nil {
		return err
	}
	defer qs.close()

	bar, err := newProgress(c.String("progress"), c.App.ErrWriter, log)
	if err != nil {
		return err
	}
	if qs.external {
		bar.announceResume(c.String("nats")) // the job id, whatever the log level
	}
	res, err := coordinator.RunDistributed(ctx, job, qs.conn, coordinator.DistOptions{
		Shards:       qs.shards,
		PartBytes:    c.Int("part-bytes"),
		Resume:       resume,
		Timeout:      qs.timeout,
		TimeoutFrom:  qs.started,
		Progress:     func(p coordinator.Progress) { bar.update(p); qs.metrics.progress(p) },
		AfterPartial: crashHook(),
		AfterPublish: crashAfterPublishHook(),
		Metrics:      qs.metrics.coordinator(),
	})
	bar.finish()
	qs.halt()
	if err != nil {
		if errors.Is(err, coordinator.ErrJobNotFound) {
			return inputError{err}
		}
		return err
	}
	res.Summary.Execution.Workers = max(res.Summary.Execution.Workers, qs.workers)
	return finish(c, g, out, res.Summary)
}

// embeddedShards is the default shard count with the embedded server.
const embeddedShards = 16

func withName(o jsq.Options, name string) jsq.Options {
	o.Name = name
	return o
}

// startWorker runs a worker with `concurrency` slots on conn until ctx is
// done, with its heartbeat, reporting to metrics (if not nil).
func startWorker(ctx context.Context, wg *sync.WaitGroup, conn *jsq.Conn, concurrency int, id string, metrics worker.Metrics,
	log zerolog.Logger) error {
	cons, err := conn.Consumer(ctx)
	if err != nil {
		return err
	}
	cfg := worker.DefaultConfig()
	if id != "" {
		cfg.ID = id
	}
	cfg.Concurrency = concurrency
	cfg.Heartbeat = max(cons.AckWait()/3, 100*time.Millisecond)
	if md := cons.MaxDeliver(); md > 0 {
		cfg.MaxDeliver = md
	} else {
		cfg.MaxDeliver = 1 << 30
	}
	cfg.Logger = log
	cfg.Metrics = metrics
	plan, err := worker.ParseFaultPlan(os.Getenv("EVALGATE_TEST_FAULT"))
	if err != nil {
		return usageError{err}
	}
	cfg.Fault = plan
	host, _ := os.Hostname()
	wg.Add(2)
	go func() {
		defer wg.Done()
		conn.Heartbeat(ctx, jsq.WorkerInfo{ID: cfg.ID, Host: host, Concurrency: concurrency, Started: time.Now().UTC()}, 5*time.Second)
	}()
	go func() {
		defer wg.Done()
		defer cons.Stop()
		if err := worker.Run(ctx, cfg, cons, conn); err != nil {
			log.Error().Err(err).Msg("worker stopped")
		}
	}()
	return nil
}

// crashHook and crashAfterPublishHook are the coordinator-crash faults of
// the tests: the process SIGKILLs itself, as kill -9 would, once n results
// are in (EVALGATE_TEST_COORDINATOR_CRASH_AFTER=n) or once n tasks are
// published (EVALGATE_TEST_COORDINATOR_CRASH_AFTER_PUBLISH=n).
func crashAfterPublishHook() func(string, bool) {
	n := int64(0)
	if _, err := fmt.Sscan(os.Getenv("EVALGATE_TEST_COORDINATOR_CRASH_AFTER_PUBLISH"), &n); err != nil || n <= 0 {
		return nil
	}
	var published atomic.Int64
	return func(string, bool) {
		if published.Add(1) >= n {
			crash.Now()
		}
	}
}

// crashHook is the crash-after-results fault (see crashAfterPublishHook).
func crashHook() func(int) {
	n := 0
	if _, err := fmt.Sscan(os.Getenv("EVALGATE_TEST_COORDINATOR_CRASH_AFTER"), &n); err != nil || n <= 0 {
		return nil
	}
	return func(done int) {
		if done >= n {
			crash.Now()
		}
	}
}
