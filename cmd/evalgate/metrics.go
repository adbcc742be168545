package main

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/internal/jsq"
	"github.com/evalgate/evalgate/internal/telemetry"
	"github.com/evalgate/evalgate/worker"
)

// metricsFlag is --metrics-listen of worker, run and server.
func metricsFlag() cli.Flag {
	return &cli.StringFlag{Name: "metrics-listen", EnvVars: []string{"EVALGATE_METRICS_LISTEN"},
		Usage: "serve Prometheus metrics (/metrics) and the /healthz and /readyz probes at host:port; a port alone listens on 127.0.0.1 (off by default)"}
}

// metrics is a command's registry and listener; a nil *metrics (no
// --metrics-listen) reports nothing.
type metrics struct {
	reg   *telemetry.Metrics
	srv   *telemetry.Server
	ready atomic.Pointer[func() error]
}

var errStarting = errors.New("starting: not connected to JetStream yet")

// startMetrics starts the listener of --metrics-listen, not ready until
// setReady; nil without the flag.
func startMetrics(c *cli.Context) (*metrics, error) {
	addr := c.String("metrics-listen")
	if addr == "" {
		return nil, nil
	}
	if _, err := telemetry.ListenAddress(addr); err != nil {
		return nil, usagef("--metrics-listen: %v", err)
	}
	m := &metrics{reg: telemetry.New(telemetry.Build{Version: version})}
	m.setReady(func() error { return errStarting })
	srv, err := telemetry.Listen(addr, m.reg, func() error { return (*m.ready.Load())() })
	if err != nil {
		return nil, err
	}
	m.srv = srv
	return m, nil
}

// close stops the listener.
func (m *metrics) close() {
	if m != nil {
		_ = m.srv.Close()
	}
}

// setReady sets the readiness check of /readyz.
func (m *metrics) setReady(ready func() error) {
	if m != nil {
		m.ready.Store(&ready)
	}
}

// connection adds conn to the NATS connection metrics.
func (m *metrics) connection(conn *jsq.Conn) {
	if m != nil {
		m.reg.Connection(conn)
	}
}

// worker is the hook of a worker with slots, nil without metrics.
func (m *metrics) worker(slots int) worker.Metrics {
	if m == nil {
		return nil
	}
	return m.reg.Worker(slots)
}

// coordinator is the hook of a coordinator, nil without metrics.
func (m *metrics) coordinator() coordinator.Metrics {
	if m == nil {
		return nil
	}
	return m.reg.Coordinator()
}

// progress sets the job gauges, when there are metrics.
func (m *metrics) progress(p coordinator.Progress) {
	if m != nil {
		m.reg.Coordinator().Progress(p.Tasks, p.TasksDone, p.QueriesDone, p.Workers)
	}
}

// queue registers the queue gauges, read through conn.
func (m *metrics) queue(conn *jsq.Conn) {
	if m == nil {
		return
	}
	m.reg.Queue(func(ctx context.Context) (telemetry.QueueStats, error) {
		qs, err := conn.QueueStats(ctx)
		if err != nil {
			return telemetry.QueueStats{}, err
		}
		out := telemetry.QueueStats{Pending: qs.Pending, AckPending: qs.AckPending, Redelivered: qs.Redelivered,
			Waiting: qs.Waiting, Streams: map[string]telemetry.StreamStats{}}
		for name, s := range qs.Streams {
			out.Streams[name] = telemetry.StreamStats{Messages: s.Messages, Bytes: s.Bytes}
		}
		return out, nil
	})
}

// connectedReady is the readiness of a process whose work needs conn: up,
// and not stopping (ctx done).
func connectedReady(ctx context.Context, conn *jsq.Conn) func() error {
	return func() error {
		switch {
		case ctx.Err() != nil:
			return errors.New("stopping")
		case !conn.Connected():
			return errors.New("not connected to NATS (reconnecting)")
		}
		return nil
	}
}
