package main

import (
	"runtime"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"
)

func workerCommand() *cli.Command {
	return &cli.Command{
		Name:  "worker",
		Usage: "score tasks from a JetStream queue until stopped (SIGTERM drains)",
		Description: "Connects to --nats, takes tasks from the EVALGATE_TASKS work queue and stores results. " +
			"Run any number, on any machine. On SIGTERM it stops taking tasks, finishes or hands back " +
			"those it holds, and exits.",
		Flags: append(markRequired(natsFlags(), "nats"),
			&cli.IntFlag{Name: "concurrency", Value: runtime.GOMAXPROCS(0), Usage: "tasks scored at once"},
			&cli.StringFlag{Name: "id", Usage: "worker name in reports and status, unique per worker (default host-pid)"},
			&cli.DurationFlag{Name: "wait-server", Value: time.Minute, Usage: "keep retrying the first connection this long"},
			metricsFlag(),
		),
		Action: func(c *cli.Context) error {
			log, err := logger(c)
			if err != nil {
				return err
			}
			logFatalErrors(c)
			if err := required(c, "nats"); err != nil {
				return err
			}
			if c.Int("concurrency") < 1 {
				return usagef("--concurrency %d: want at least 1", c.Int("concurrency"))
			}
			start := time.Now()
			m, err := startMetrics(c)
			if err != nil {
				return err
			}
			defer m.close()
			opts := natsOptions(c, "evalgate-worker")
			opts.Logger = log
			conn, err := connectWithRetry(c.Context, opts, c.Duration("wait-server"), func(err error) {
				log.Warn().Err(err).Msg("waiting for the NATS server")
			})
			if err != nil {
				return err
			}
			defer conn.Close()
			m.connection(conn)
			if err := conn.WaitTopology(c.Context, func() {
				log.Warn().Msg("waiting for the evalgate streams: start `evalgate server` or a coordinator")
			}); err != nil {
				return err
			}
			// Started and stopped are shown at any log level: an operator
			// otherwise cannot tell a connected worker from a hung one.
			lifecycle := log
			if log.GetLevel() > zerolog.InfoLevel {
				lifecycle = log.Level(zerolog.InfoLevel)
			}
			lifecycle.Info().Str("nats", c.String("nats")).Int("concurrency", c.Int("concurrency")).Msg("worker started")
			var wg sync.WaitGroup
			if err := startWorker(c.Context, &wg, conn, c.Int("concurrency"), c.String("id"), m.worker(c.Int("concurrency")), log); err != nil {
				return err
			}
			m.setReady(connectedReady(c.Context, conn))
			wg.Wait()
			lifecycle.Info().Str("uptime", time.Since(start).Round(time.Millisecond).String()).Msg("worker stopped")
			return nil
		},
	}
}
