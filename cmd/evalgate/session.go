package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/internal/embedded"
	"github.com/evalgate/evalgate/internal/jsq"
	"github.com/evalgate/evalgate/worker"
)

// queueFlags are the flags of a command that runs a job through the queue
// (run, judge), besides the connection flags.
func queueFlags(cacheNote string) []cli.Flag {
	store := "embedded server's store directory (default: a temporary directory, removed at exit)"
	if cacheNote != "" {
		store += "; " + cacheNote
	}
	return []cli.Flag{
		&cli.IntFlag{Name: "workers", Value: -1, Usage: "in-process workers (default: one per CPU with the embedded server, none with --nats)"},
		&cli.IntFlag{Name: "shards", Usage: "hash partitions of the queries (default 16 with the embedded server, 64 with --nats)"},
		&cli.StringFlag{Name: "store", Usage: store},
		&cli.DurationFlag{Name: "timeout", Usage: "fail the job if it has not finished after this long, waiting for the server included (0: wait forever)"},
		&cli.StringFlag{Name: "resume", Usage: "resume job JOB after a coordinator crash (with --nats; the inputs must be unchanged)"},
		&cli.StringFlag{Name: "progress", Value: "auto", Usage: "progress on stderr: auto (a bar on a terminal, else lines at --log-level info), on (a bar on a terminal, else a JSON line every 10s) or off"},
		&cli.DurationFlag{Name: "wait-server", Value: time.Minute, Usage: "with --nats, keep retrying until JetStream answers this long"},
		metricsFlag(),
	}
}

// queueSession is the queue a job runs through: an embedded JetStream
// server in this process with in-process workers, or an external one
// (--nats) whose workers run elsewhere.
type queueSession struct {
	conn     *jsq.Conn
	external bool
	workers  int
	shards   int
	started  time.Time
	timeout  time.Duration
	metrics  *metrics // nil without --metrics-listen

	stopWorkers context.CancelFunc
	wg          sync.WaitGroup
	closers     []func() // in the order to run them
}

// openQueueSession checks the queue flags, then starts (or connects to) the
// server and the in-process workers. --timeout bounds waiting for the
// server too. The caller closes the session.
func openQueueSession(c *cli.Context, log zerolog.Logger) (*queueSession, error) {
	s := &queueSession{external: c.String("nats") != "", started: time.Now(), timeout: c.Duration("timeout"),
		stopWorkers: func() {}}
	s.workers = c.Int("workers")
	if s.workers < 0 {
		s.workers = 0
		if !s.external {
			s.workers = runtime.GOMAXPROCS(0)
		}
	}
	if !s.external && s.workers == 0 {
		return nil, usagef("--workers 0 without --nats: nothing would run the tasks")
	}
	s.shards = c.Int("shards")
	if !c.IsSet("shards") {
		// In one process fewer partitions keep less in flight; machines
		// added with --nats get more of them to share.
		s.shards = embeddedShards
		if s.external {
			s.shards = coordinator.DefaultShards
		}
	}
	if s.shards < 1 || s.shards > 65536 {
		return nil, usagef("--shards %d: want 1 to 65536", s.shards)
	}
	m, err := startMetrics(c)
	if err != nil {
		return nil, err
	}
	s.metrics = m
	s.closers = append(s.closers, m.close)
	if err := s.connect(c, log); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// connect starts the embedded server (or reaches the external one), sets
// up the topology and starts the in-process workers.
func (s *queueSession) connect(c *cli.Context, log zerolog.Logger) error {
	ctx := c.Context
	setupCtx, cancelSetup := ctx, context.CancelFunc(func() {})
	if s.timeout > 0 {
		setupCtx, cancelSetup = context.WithTimeout(ctx, s.timeout)
	}
	defer cancelSetup()
	connOpts := natsOptions(c, "evalgate-coordinator")
	connOpts.Logger = log
	if !s.external {
		store := c.String("store")
		if store == "" {
			dir, err := os.MkdirTemp("", "evalgate-nats-")
			if err != nil {
				return fmt.Errorf("create store directory: %w", err)
			}
			s.closers = append(s.closers, func() { os.RemoveAll(dir) })
			store = dir
		}
		srv, err := embedded.Start(embedded.Options{StoreDir: store})
		if err != nil {
			return err
		}
		s.closers = append([]func(){srv.Shutdown}, s.closers...)
		connOpts.InProcess = srv
	}
	wait := time.Duration(0)
	if s.external {
		wait = c.Duration("wait-server")
	}
	conn, err := connectWithRetry(setupCtx, connOpts, wait, func(err error) {
		log.Warn().Err(err).Msg("waiting for JetStream")
	})
	if err != nil {
		return setupTimedOut(ctx, setupCtx, s.timeout, err)
	}
	s.conn = conn
	s.closers = append([]func(){conn.Close}, s.closers...)
	s.metrics.connection(conn)
	if err := retryUntil(setupCtx, wait, log, func() error { return conn.EnsureTopology(setupCtx, topologyFromFlags(c)) }); err != nil {
		return setupTimedOut(ctx, setupCtx, s.timeout, err)
	}
	s.metrics.setReady(connectedReady(ctx, conn))
	if s.workers == 0 {
		return nil
	}
	wconn, err := jsq.Connect(ctx, withName(connOpts, "evalgate-worker"))
	if err != nil {
		return err
	}
	s.closers = append([]func(){wconn.Close}, s.closers...)
	s.metrics.connection(wconn)
	wctx, stop := context.WithCancel(ctx)
	s.stopWorkers = stop
	return startWorker(wctx, &s.wg, wconn, s.workers, "in-process-"+worker.DefaultConfig().ID, s.metrics.worker(s.workers), log)
}

// halt stops the in-process workers and waits for them: they finish or
// hand back what they hold.
func (s *queueSession) halt() {
	s.stopWorkers()
	s.wg.Wait()
}

// close stops the workers, closes the connections and the embedded
// server, and removes a temporary store.
func (s *queueSession) close() {
	s.halt()
	for _, f := range s.closers {
		f()
	}
}
