package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/internal/embedded"
	"github.com/evalgate/evalgate/internal/jsq"
)

func serverCommand() *cli.Command {
	return &cli.Command{
		Name:  "server",
		Usage: "run a standalone JetStream server for workers and coordinators (small deployments, dev boxes)",
		Description: "Listens on 127.0.0.1 unless --listen, or a listen address in --config, says otherwise " +
			"(not both, unless they agree); a non-loopback address needs client authentication: --user/--password, " +
			"--token, or users, nkeys, a token, operator JWTs or verified client certificates in a --config file " +
			"(not both the flags and the file). The accounts of the file's users need `jetstream: enabled`. " +
			"Creates the evalgate streams. --print-config prints a starting configuration with one least-privilege " +
			"user per role (coordinator, worker, status) and exits: passwords from --coordinator-password, " +
			"--worker-password, --status-password (or their environment variables), else generated; with " +
			"--env-passwords the file reads them from those environment variables when the server starts.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "listen", Value: "127.0.0.1:4222", Usage: "host:port for clients (without it, a listen address in --config takes the default's place)"},
			&cli.StringFlag{Name: "store", Value: "evalgate-data", Usage: "JetStream store directory"},
			&cli.StringFlag{Name: "config", Usage: "nats-server configuration file (auth, TLS, limits)"},
			&cli.StringFlag{Name: "user", Usage: "require this user name", EnvVars: []string{"EVALGATE_SERVER_USER"}},
			&cli.StringFlag{Name: "password", Usage: "password for --user (bcrypt hashes accepted)", EnvVars: []string{"EVALGATE_SERVER_PASSWORD"}},
			&cli.StringFlag{Name: "token", Usage: "require this token", EnvVars: []string{"EVALGATE_SERVER_TOKEN"}},
			&cli.IntFlag{Name: "max-payload", Usage: "largest message in bytes (default 1 MiB; larger tasks go to the object store anyway)"},
			&cli.BoolFlag{Name: "sync-always", Usage: "fsync every write (durable across power loss, slower)"},
			metricsFlag(),
			&cli.BoolFlag{Name: "print-config", Usage: "print a starting nats-server configuration with least-privilege users for the coordinator, workers and status, and exit"},
			&cli.BoolFlag{Name: "env-passwords", Usage: "with --print-config, have the configuration read the passwords not given from $EVALGATE_<ROLE>_PASSWORD when the server starts"},
			&cli.StringFlag{Name: "coordinator-password", Usage: "with --print-config, the coordinator user's password", EnvVars: []string{jsq.PasswordEnv(jsq.RoleCoordinator)}},
			&cli.StringFlag{Name: "worker-password", Usage: "with --print-config, the worker user's password", EnvVars: []string{jsq.PasswordEnv(jsq.RoleWorker)}},
			&cli.StringFlag{Name: "status-password", Usage: "with --print-config, the status user's password", EnvVars: []string{jsq.PasswordEnv(jsq.RoleStatus)}},
		}, topologyFlags()...),
		Action: func(c *cli.Context) error {
			log, err := logger(c)
			if err != nil {
				return err
			}
			logFatalErrors(c)
			if c.Bool("print-config") {
				return printConfig(c)
			}
			// The password flags are read from the environment too, where
			// a server whose configuration refers to them has them: only
			// --env-passwords is refused without --print-config.
			if c.Bool("env-passwords") {
				return usagef("--env-passwords goes with --print-config")
			}
			o := embedded.Options{
				StoreDir: c.String("store"), ConfigFile: c.String("config"), SyncAlways: c.Bool("sync-always"),
				Token: c.String("token"), User: c.String("user"), Password: c.String("password"), Logger: &log,
			}
			// Without --listen, a listen address in --config wins over
			// the flag's default.
			listen := c.String("listen")
			if c.IsSet("listen") {
				o.Listen = listen
			} else {
				o.DefaultListen = listen
			}
			host, portText, err := net.SplitHostPort(listen)
			if err != nil {
				return usagef("--listen %q: %v", listen, err)
			}
			if host == "" {
				return usagef("--listen %q: give a host (127.0.0.1 for this machine only, 0.0.0.0 for all interfaces)", listen)
			}
			if port, err := strconv.Atoi(portText); err != nil || port < -1 || port > 65535 {
				return usagef("--listen %q: the port must be a number from 0 to 65535 (0: any free port)", listen)
			}
			o.AllowNonLoopback = !(host == "localhost" || net.ParseIP(host) != nil && net.ParseIP(host).IsLoopback())
			switch {
			case c.String("user") != "" && c.String("password") == "":
				return usagef("--user needs --password (or EVALGATE_SERVER_PASSWORD)")
			case c.String("password") != "" && c.String("user") == "":
				return usagef("--password needs --user (or EVALGATE_SERVER_USER)")
			case c.Int("max-payload") < 0 || c.Int("max-payload") > math.MaxInt32:
				return usagef("--max-payload %d: give a size in bytes from 1 to %d (0: the default)", c.Int("max-payload"), math.MaxInt32)
			}
			o.MaxPayload = int32(c.Int("max-payload"))
			m, err := startMetrics(c)
			if err != nil {
				return err
			}
			defer m.close()
			srv, err := embedded.Start(o)
			var noAuth *embedded.NoAuthError
			switch {
			case errors.As(err, &noAuth):
				where := "--listen " + noAuth.Listen
				if !c.IsSet("listen") {
					where = fmt.Sprintf("listen address %s in --config %s", noAuth.Listen, c.String("config"))
				}
				return usagef("%s exposes the queue beyond this machine, but %s: require authentication with --user/--password, "+
					"--token, or an authorization block (users, nkeys, token) or verified client certificates in --config", where, noAuth.Why)
			case errors.Is(err, embedded.ErrAuthConflict):
				return usagef("--config %s configures client authentication itself: drop --user/--password and --token "+
					"(and EVALGATE_SERVER_USER, EVALGATE_SERVER_TOKEN), or move them into the file", c.String("config"))
			case errors.Is(err, embedded.ErrListenConflict):
				return usagef("--listen and --config: %v", err)
			case errors.Is(err, embedded.ErrNoJetStream):
				return usageError{err}
			case errors.Is(err, embedded.ErrBadStore):
				return usagef("--store: %v", err)
			case errors.Is(err, embedded.ErrInvalidOptions):
				return usageError{err}
			case err != nil:
				return err
			}
			defer srv.Shutdown()
			m.setReady(srv.Ready)
			// Create the topology through an in-process client that
			// authenticates as the server's internal user, whatever the
			// configured auth. In a cluster JetStream answers only once
			// the nodes have elected a leader: retry for a minute.
			streams := fmt.Sprintf("streams %s %s %s %s %s, consumer %s, buckets %s %s %s %s", jsq.StreamTasks, jsq.StreamPartials,
				jsq.StreamDLQ, jsq.StreamAdvisories, jsq.StreamAnswers, jsq.ConsumerWorkers, jsq.BucketJobs, jsq.BucketWorkers,
				jsq.BucketLimits, jsq.BucketShards)
			co := jsq.Options{InProcess: srv, Name: "evalgate-server", Logger: log}
			if iu, err := srv.InternalUser(); err != nil {
				log.Warn().Err(err).Msg("evalgate streams not created here: the first `evalgate run --nats` creates them")
				streams = "streams not created (the first coordinator creates them)"
			} else {
				if iu != nil {
					co.Nkey, co.SignNonce = iu.Nkey, iu.Sign
				}
				if err := ensureTopology(c.Context, co, topologyFromFlags(c), log); err != nil {
					return err
				}
				if m != nil {
					// The queue gauges read the queue as the internal user.
					qc, err := jsq.Connect(c.Context, co)
					if err != nil {
						return err
					}
					defer qc.Close()
					m.connection(qc)
					m.queue(qc)
				}
			}
			if srv.Exposed() && !srv.TLS() {
				log.Warn().Msg("listening beyond loopback without TLS: credentials and data travel in clear text (use --config with a tls block)")
			}
			fmt.Fprintf(c.App.ErrWriter, "evalgate server: JetStream on %s, store %s\n%s\n", clientURLs(srv.ClientURL()), c.String("store"), streams)
			<-c.Context.Done()
			log.Info().Msg("server stopping")
			return nil
		},
	}
}

// printConfig prints a starting nats-server configuration with a user per
// role (jsq.ServerConfig), and on stderr which passwords it generated.
func printConfig(c *cli.Context) error {
	o := jsq.ConfigOptions{StoreDir: c.String("store"), MaxPayload: int64(c.Int("max-payload")), FromEnv: c.Bool("env-passwords"),
		Passwords: map[jsq.Role]string{}}
	for _, r := range jsq.Roles {
		if p := c.String(string(r) + "-password"); p != "" {
			o.Passwords[r] = p
		}
	}
	config, generated, err := jsq.ServerConfig(o)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprint(c.App.Writer, config); err != nil {
		return err
	}
	if len(generated) > 0 {
		fmt.Fprintf(c.App.ErrWriter, "evalgate server: generated the passwords of %v in the configuration printed\n", generated)
	}
	return nil
}

func ensureTopology(ctx context.Context, o jsq.Options, t jsq.Topology, log zerolog.Logger) error {
	return retryUntil(ctx, time.Minute, log, func() error {
		conn, err := jsq.Connect(ctx, o)
		if err != nil {
			return err
		}
		defer conn.Close()
		return conn.EnsureTopology(ctx, t)
	})
}

// clientURLs is what to tell clients: a server bound to every interface
// (0.0.0.0 or ::) is reached through this host's name, not that address.
func clientURLs(u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return u
	}
	if ip := net.ParseIP(parsed.Hostname()); ip == nil || !ip.IsUnspecified() {
		return u
	}
	host, err := os.Hostname()
	if err != nil {
		return u + " (every interface)"
	}
	return fmt.Sprintf("every interface; clients: nats://%s", net.JoinHostPort(host, parsed.Port()))
}
