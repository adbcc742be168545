// Command retriever is a small BM25 search service over a JSON Lines
// corpus, to evaluate with evalgate: it answers the same query in two
// modes (baseline and candidate) so that a team can A/B test two
// retrieval strategies against one gold set. See README.md.
//
//	retriever --corpus corpus.jsonl [--listen 127.0.0.1:8080] [--index DIR]
//
// It indexes the corpus (in memory, or in DIR with --index: reused at the
// next start if the corpus is unchanged), then serves the API of package
// api until SIGINT or SIGTERM, when it stops taking connections, finishes
// the requests in flight (for up to --shutdown-timeout) and exits 0. A
// second signal exits at once. Logs are JSON lines on stderr. Exit codes:
// 0 stopped cleanly, 1 the service failed, 2 bad usage, a bad corpus, or an
// --index directory that holds another corpus's index or none.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/examples/retriever/internal/api"
	"github.com/evalgate/evalgate/examples/retriever/internal/corpus"
	"github.com/evalgate/evalgate/examples/retriever/internal/engine"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailed  = 1
	exitBadArgs = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second signal gets the default action: exit at once
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stderr, nil))
}

// config is the command line.
type config struct {
	corpus          string
	index           string
	listen          string
	logLevel        string
	shutdownTimeout time.Duration
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("retriever", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.corpus, "corpus", "", "JSON Lines corpus to index (doc_id/_id/id, title, text; .gz works)")
	fs.StringVar(&c.index, "index", "", "keep the index in this directory (reused when the corpus is unchanged); default: in memory")
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8080", "address to serve on")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug (one line per request), info, warn or error")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 10*time.Second, "how long to wait for requests in flight at shutdown")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: retriever --corpus corpus.jsonl [--listen 127.0.0.1:8080] [--index DIR]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if c.corpus == "" && c.index == "" {
		return c, errors.New("give --corpus (and optionally --index DIR), or --index DIR of a built index")
	}
	return c, nil
}

// run runs the service until ctx is cancelled and returns the exit code.
// When ready is not nil it receives the address served on once the
// service takes requests.
func run(ctx context.Context, args []string, stderr io.Writer, ready chan<- string) int {
	c, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "retriever: %v\n", err)
		return exitBadArgs
	}
	level, err := zerolog.ParseLevel(c.logLevel)
	if err != nil || c.logLevel == "" {
		fmt.Fprintf(stderr, "retriever: --log-level %q: want debug, info, warn or error\n", c.logLevel)
		return exitBadArgs
	}
	log := zerolog.New(stderr).Level(level).With().Timestamp().Str("service", "retriever").Logger()
	if err := serve(ctx, c, log, ready); err != nil {
		log.Error().Err(err).Msg("stopped")
		if errors.Is(err, corpus.ErrBadInput) || errors.Is(err, engine.ErrOtherCorpus) ||
			errors.Is(err, engine.ErrNotIndex) || errors.Is(err, os.ErrNotExist) {
			return exitBadArgs
		}
		return exitFailed
	}
	return exitOK
}

// serve loads the index, then serves it until ctx is cancelled.
func serve(ctx context.Context, c config, log zerolog.Logger, ready chan<- string) error {
	e, err := engine.Load(ctx, c.corpus, c.index, log)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			log.Info().Msg("stopped while indexing")
			return nil
		}
		return err
	}
	defer func() {
		if err := e.Close(); err != nil {
			log.Error().Err(err).Msg("close index")
		}
	}()
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	srv := &http.Server{
		Handler:           api.NewHandler(e, log),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info().Str("addr", ln.Addr().String()).Int("docs", e.Stats().Docs).Msg("serving")
	if ready != nil {
		ready <- ln.Addr().String()
	}
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	start := time.Now()
	log.Info().Msg("shutting down: finishing requests in flight")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("shut down: %w", err)
	}
	<-served // http.ErrServerClosed
	log.Info().Dur("took", time.Since(start)).Msg("stopped")
	return nil
}
