package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Paths served on the metrics listener.
const (
	PathMetrics = "/metrics"
	PathHealth  = "/healthz" // 200 while the process runs
	PathReady   = "/readyz"  // 200 when ready, 503 with the reason when not
)

// Port is the port evalgate's deployments (docker-compose.yml,
// deploy/kubernetes) give --metrics-listen. Nothing listens unless asked.
const Port = 9180

// ListenAddress turns a --metrics-listen value into host:port: a port
// alone ("9180" or ":9180") listens on 127.0.0.1, so exposing metrics
// beyond the machine takes an explicit host (0.0.0.0:9180).
func ListenAddress(s string) (string, error) {
	if s == "" {
		return "", errors.New("metrics listen address is empty")
	}
	if !strings.Contains(s, ":") {
		s = ":" + s
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", fmt.Errorf("metrics listen address %q: %w", s, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("metrics listen address %q: the port must be a number from 0 to 65535", s)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Server serves the metrics and the probes.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
	err  error // of Serve, once done is closed
}

// Listen listens on addr (see ListenAddress) and serves m's metrics on
// PathMetrics, PathHealth and PathReady until Close. ready says whether
// the process is ready: nil, or why not; nil ready means always ready.
func Listen(addr string, m *Metrics, ready func() error) (*Server, error) {
	addr, err := ListenAddress(addr)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for metrics on %s: %w", addr, err)
	}
	s := &Server{ln: ln, done: make(chan struct{})}
	s.srv = &http.Server{Handler: Handler(m, ready), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.err = err
		}
	}()
	return s, nil
}

// Addr is the address the server listens on (the port chosen when addr
// had port 0).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, letting scrapes in progress finish for up to
// two seconds, and waits for it.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		_ = s.srv.Close()
	}
	<-s.done
	return s.err
}

// Handler serves m's metrics and the probes (see Listen).
func Handler(m *Metrics, ready func() error) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(PathMetrics, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc(PathHealth, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc(PathReady, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if ready != nil {
			if err := ready(); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "not ready: %v\n", err)
				return
			}
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}
