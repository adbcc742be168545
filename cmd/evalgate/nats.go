package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/internal/jsq"
)

// natsFlags are the connection flags shared by run, worker and status.
// Secrets are better passed through the environment than on the command
// line, where other users of the machine can read them.
func natsFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "nats", Usage: "NATS server URL(s), comma-separated (external JetStream)", EnvVars: []string{"EVALGATE_NATS_URL"}},
		&cli.StringFlag{Name: "nats-creds", Usage: "credentials file (JWT and nkey seed)", EnvVars: []string{"EVALGATE_NATS_CREDS"}},
		&cli.StringFlag{Name: "nats-nkey", Usage: "nkey seed file", EnvVars: []string{"EVALGATE_NATS_NKEY"}},
		&cli.StringFlag{Name: "nats-user", Usage: "user name", EnvVars: []string{"EVALGATE_NATS_USER"}},
		&cli.StringFlag{Name: "nats-password", Usage: "password (prefer the environment variable)", EnvVars: []string{"EVALGATE_NATS_PASSWORD"}},
		&cli.StringFlag{Name: "nats-token", Usage: "token (prefer the environment variable)", EnvVars: []string{"EVALGATE_NATS_TOKEN"}},
		&cli.StringFlag{Name: "tls-ca", Usage: "CA bundle to verify the server"},
		&cli.StringFlag{Name: "tls-cert", Usage: "client certificate (mutual TLS)"},
		&cli.StringFlag{Name: "tls-key", Usage: "client key (mutual TLS)"},
		&cli.BoolFlag{Name: "tls-first", Usage: "TLS handshake before the NATS protocol (TLS-terminating proxies)"},
	}
}

// topologyFlags set the queue limits when evalgate creates the streams.
func topologyFlags() []cli.Flag {
	d := jsq.DefaultTopology()
	return []cli.Flag{
		&cli.DurationFlag{Name: "ack-wait", Value: d.AckWait, EnvVars: []string{"EVALGATE_ACK_WAIT"}, Usage: "how long a silent worker keeps a task before it goes to another (when evalgate creates the queue)"},
		&cli.IntFlag{Name: "max-deliver", Value: d.MaxDeliver, Usage: "attempts per task before the job fails (when evalgate creates the queue)"},
		&cli.IntFlag{Name: "replicas", Value: d.Replicas, Usage: "stream replicas (3 on a JetStream cluster)"},
	}
}

func topologyFromFlags(c *cli.Context) jsq.Topology {
	t := jsq.DefaultTopology()
	t.AckWait, t.MaxDeliver, t.Replicas = c.Duration("ack-wait"), c.Int("max-deliver"), c.Int("replicas")
	return t
}

func natsOptions(c *cli.Context, name string) jsq.Options {
	host, _ := os.Hostname()
	return jsq.Options{
		URL:          c.String("nats"),
		Name:         name + "@" + host,
		CredsFile:    c.String("nats-creds"),
		NkeySeedFile: c.String("nats-nkey"),
		User:         c.String("nats-user"),
		Password:     c.String("nats-password"),
		Token:        c.String("nats-token"),
		TLSCA:        c.String("tls-ca"),
		TLSCert:      c.String("tls-cert"),
		TLSKey:       c.String("tls-key"),
		TLSFirst:     c.Bool("tls-first"),
	}
}

// connectWithRetry connects, retrying while no server answers (a worker
// may start before the server) but failing at once on rejected
// credentials or connection options that cannot work.
func connectWithRetry(ctx context.Context, o jsq.Options, wait time.Duration, onWait func(error)) (*jsq.Conn, error) {
	deadline := time.Now().Add(wait)
	for {
		conn, err := jsq.Connect(ctx, o)
		if errors.Is(err, jsq.ErrInvalidOptions) {
			return nil, usageError{err}
		}
		if err == nil || wait <= 0 || time.Now().After(deadline) || isAuthError(err) {
			return conn, err
		}
		if onWait != nil {
			onWait(err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last attempt: %w)", ctx.Err(), err)
		case <-time.After(time.Second):
		}
	}
}

// setupTimedOut turns an error met while waiting for the server under
// --timeout (setup is ctx with the timeout) into the job's timeout error.
func setupTimedOut(ctx, setup context.Context, timeout time.Duration, err error) error {
	if timeout > 0 && ctx.Err() == nil && errors.Is(setup.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w after %s: waiting for JetStream: %w", coordinator.ErrTimeout, timeout, err)
	}
	return err
}

func isAuthError(err error) bool { return errors.Is(err, jsq.ErrUnauthorized) }

// retryUntil retries fn every second for up to wait while it fails (a
// JetStream cluster answers only once it has elected a leader), except on
// rejected credentials.
func retryUntil(ctx context.Context, wait time.Duration, log zerolog.Logger, fn func() error) error {
	deadline := time.Now().Add(wait)
	for {
		err := fn()
		if err == nil || isAuthError(err) || time.Now().After(deadline) {
			return err
		}
		log.Info().Err(err).Msg("JetStream not ready yet; retrying")
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last attempt: %w)", ctx.Err(), err)
		case <-time.After(time.Second):
		}
	}
}
