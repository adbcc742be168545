package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/internal/embedded"
	"github.com/evalgate/evalgate/internal/jsq"
	"github.com/evalgate/evalgate/perquery"
	"github.com/evalgate/evalgate/worker"
)

func runCommand() *cli.Command {
	flags := slices.Concat(jobFlags(), outputFlags(), gateFlags(), pairingFlags())
	flags = append(flags, natsFlags()...)
	flags = append(flags, topologyFlags()...)
	flags = append(flags,
		&cli.IntFlag{Name: "workers", Value: -1, Usage: "in-process workers (default: one per CPU with the embedded server, none with --nats)"},
		&cli.IntFlag{Name: "shards", Usage: "hash partitions of the queries (default 16 with the embedded server, 64 with --nats)"},
		&cli.IntFlag{Name: "part-bytes", Value: coordinator.DefaultPartBytes, Usage: "target size of one task's rows"},
		&cli.StringFlag{Name: "store", Usage: "embedded server's store directory (default: a temporary directory, removed at exit)"},
		&cli.DurationFlag{Name: "timeout", Usage: "fail the job if it has not finished after this long, waiting for the server included (0: wait forever)"},
		&cli.StringFlag{Name: "resume", Usage: "resume job JOB after a coordinator crash (with --nats; the inputs must be unchanged)"},
		&cli.StringFlag{Name: "progress", Value: "auto", Usage: "progress on stderr: auto (a bar on a terminal, else lines at --log-level info), on (a bar on a terminal, else a JSON line every 10s) or off"},
		&cli.DurationFlag{Name: "wait-server", Value: time.Minute, Usage: "with --nats, keep retrying until JetStream answers this long"},
	)
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
	ctx := c.Context
	external := c.String("nats") != ""
	resume := c.String("resume")
	if resume != "" && !external {
		return usagef("--resume needs --nats: an embedded server's queue ends with the process")
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
			"skip-no-relevant", "only-run-queries", "strict", "shards", "part-bytes"} {
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
	} else if c.IsSet("baseline-run") {
		return usagef("--resume takes the baseline run from the job; do not give --baseline-run")
	}
	job.Logger = log
	if c.String("per-query") != "" || c.Bool("q") {
		// The measures are known only after a resumed job's manifest is
		// read; the factory looks them up when called.
		job.PerQuery = func() (perquery.Writer, error) { return out.perQueryFactory(job.Metric.Measures)() }
	}
	workers := c.Int("workers")
	if workers < 0 {
		workers = 0
		if !external {
			workers = runtime.GOMAXPROCS(0)
		}
	}
	if !external && workers == 0 {
		return usagef("--workers 0 without --nats: nothing would score the tasks")
	}
	shards := c.Int("shards")
	if !c.IsSet("shards") {
		// In one process fewer partitions keep less in flight; machines
		// added with --nats get more of them to share.
		shards = embeddedShards
		if external {
			shards = coordinator.DefaultShards
		}
	}
	if shards < 1 || shards > 65536 {
		return usagef("--shards %d: want 1 to 65536", shards)
	}
	if c.Int("part-bytes") < 1 {
		return usagef("--part-bytes %d: want at least 1", c.Int("part-bytes"))
	}

	// --timeout bounds the whole run, waiting for the server included.
	started, timeout := time.Now(), c.Duration("timeout")
	setupCtx, cancelSetup := ctx, context.CancelFunc(func() {})
	if timeout > 0 {
		setupCtx, cancelSetup = context.WithTimeout(ctx, timeout)
	}
	defer cancelSetup()
	connOpts := natsOptions(c, "evalgate-coordinator")
	connOpts.Logger = log
	if !external {
		store := c.String("store")
		if store == "" {
			dir, err := os.MkdirTemp("", "evalgate-nats-")
			if err != nil {
				return fmt.Errorf("create store directory: %w", err)
			}
			defer os.RemoveAll(dir)
			store = dir
		}
		srv, err := embedded.Start(embedded.Options{StoreDir: store})
		if err != nil {
			return err
		}
		defer srv.Shutdown()
		connOpts.InProcess = srv
	}
	wait := time.Duration(0)
	if external {
		wait = c.Duration("wait-server")
	}
	conn, err := connectWithRetry(setupCtx, connOpts, wait, func(err error) {
		log.Warn().Err(err).Msg("waiting for JetStream")
	})
	if err != nil {
		return setupTimedOut(ctx, setupCtx, timeout, err)
	}
	defer conn.Close()
	if err := retryUntil(setupCtx, wait, log, func() error { return conn.EnsureTopology(setupCtx, topologyFromFlags(c)) }); err != nil {
		return setupTimedOut(ctx, setupCtx, timeout, err)
	}

	// In-process workers, stopped once the coordinator is done.
	wctx, stopWorkers := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopWorkers()
	if workers > 0 {
		wconn, err := jsq.Connect(ctx, withName(connOpts, "evalgate-worker"))
		if err != nil {
			return err
		}
		defer wconn.Close()
		if err := startWorker(wctx, &wg, wconn, workers, "in-process-"+worker.DefaultConfig().ID, log); err != nil {
			return err
		}
	}

	bar, err := newProgress(c.String("progress"), c.App.ErrWriter, log)
	if err != nil {
		return err
	}
	if external {
		bar.announceResume(c.String("nats")) // the job id, whatever the log level
	}
	res, err := coordinator.RunDistributed(ctx, job, conn, coordinator.DistOptions{
		Shards:       shards,
		PartBytes:    c.Int("part-bytes"),
		Resume:       resume,
		Timeout:      timeout,
		TimeoutFrom:  started,
		Progress:     bar.update,
		AfterPartial: crashHook(),
		AfterPublish: crashAfterPublishHook(),
	})
	bar.finish()
	stopWorkers()
	if err != nil {
		if errors.Is(err, coordinator.ErrJobNotFound) {
			return usageError{err}
		}
		return err
	}
	res.Summary.Execution.Workers = max(res.Summary.Execution.Workers, workers)
	return finish(c, g, out, res.Summary)
}

// embeddedShards is the default shard count with the embedded server.
const embeddedShards = 16

func withName(o jsq.Options, name string) jsq.Options {
	o.Name = name
	return o
}

// startWorker runs a worker with `concurrency` slots on conn until ctx is
// done, with its heartbeat.
func startWorker(ctx context.Context, wg *sync.WaitGroup, conn *jsq.Conn, concurrency int, id string, log zerolog.Logger) error {
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
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
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
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
}
