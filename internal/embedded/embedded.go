// Package embedded runs a NATS server with JetStream inside the evalgate
// process: the queue of `evalgate run` (in-process connections only, no
// listener) and of `evalgate server` (listening, by default on loopback).
//
// Its contract: the server never listens beyond loopback unless the caller
// asks for an explicit non-loopback address; the store is a directory the
// caller owns (never the shared os.TempDir()/nats default); signals are
// left to the caller; and in-process clients survive Restart, because they
// connect through a provider that always forwards to the live server.
package embedded

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
)

// Options configures the server.
type Options struct {
	// StoreDir holds JetStream's file store. Required.
	StoreDir string
	// Listen is "host:port" for client connections. Empty: no listener at
	// all (in-process connections only). Port 0 or -1 picks a free port.
	Listen string
	// AllowNonLoopback must be set to listen on anything but loopback.
	AllowNonLoopback bool
	// Name is the server name (default "evalgate").
	Name string
	// MaxPayload overrides the 1 MiB default message size limit (bytes).
	MaxPayload int32
	// SyncAlways fsyncs every write instead of every two minutes.
	SyncAlways bool
	// ConfigFile, if set, is a nats-server configuration file applied
	// before the options above (for auth, TLS, limits).
	ConfigFile string
	// User and Password, or Token, require authentication without a
	// config file (a password starting with $2a$ is a bcrypt hash).
	User     string
	Password string
	Token    string
	// Logger receives the server's log lines at debug level; nil: silent.
	Logger *zerolog.Logger
}

// Server is a running embedded server.
type Server struct {
	opts Options
	port int
	live atomic.Pointer[server.Server]
	mu   sync.Mutex
}

// Start starts a server and waits until it accepts connections.
func Start(o Options) (*Server, error) {
	if o.StoreDir == "" {
		return nil, errors.New("start nats server: no store directory")
	}
	if o.Name == "" {
		o.Name = "evalgate"
	}
	s := &Server{opts: o, port: -1}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) serverOptions() (*server.Options, error) {
	o := &server.Options{}
	if s.opts.ConfigFile != "" {
		fo, err := server.ProcessConfigFile(s.opts.ConfigFile)
		if err != nil {
			return nil, fmt.Errorf("read nats config %s: %w", s.opts.ConfigFile, err)
		}
		o = fo
	}
	if o.ServerName == "" {
		o.ServerName = s.opts.Name // a cluster config names each node
	}
	o.JetStream = true
	o.StoreDir = s.opts.StoreDir
	o.NoSigs = true
	o.NoLog = s.opts.Logger == nil
	o.HTTPPort = 0
	if s.opts.MaxPayload > 0 {
		o.MaxPayload = s.opts.MaxPayload
	}
	if s.opts.SyncAlways {
		o.SyncAlways = true
	}
	if s.opts.User != "" {
		o.Users = []*server.User{{Username: s.opts.User, Password: s.opts.Password}}
	}
	if s.opts.Token != "" {
		o.Authorization = s.opts.Token
	}
	if s.opts.Listen == "" {
		o.DontListen = true
		o.Host = "127.0.0.1"
		return o, nil
	}
	host, portText, err := net.SplitHostPort(s.opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("parse listen address %q: %w", s.opts.Listen, err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return nil, fmt.Errorf("parse listen port %q: %w", portText, err)
	}
	if host == "" {
		return nil, fmt.Errorf("listen address %q: give a host (127.0.0.1 for this machine only)", s.opts.Listen)
	}
	if !isLoopback(host) && !s.opts.AllowNonLoopback {
		return nil, fmt.Errorf("listen address %q is not loopback: pass it explicitly to expose the server", s.opts.Listen)
	}
	if s.port > 0 {
		port = s.port // a restart keeps the port clients know
	} else if port == 0 {
		port = -1
	}
	o.Host, o.Port = host, port
	return o, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) start() error {
	o, err := s.serverOptions()
	if err != nil {
		return err
	}
	ns, err := server.NewServer(o)
	if err != nil {
		return fmt.Errorf("start nats server: %w", err)
	}
	if s.opts.Logger != nil {
		ns.SetLoggerV2(&logAdapter{l: *s.opts.Logger}, false, false, false)
	}
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return errors.New("start nats server: not ready after 30s")
	}
	if addr := ns.Addr(); addr != nil {
		if ta, ok := addr.(*net.TCPAddr); ok {
			s.port = ta.Port
		}
	}
	s.live.Store(ns)
	return nil
}

// InProcessConn implements nats.InProcessConnProvider, always against the
// live server, so in-process clients reconnect after Restart.
func (s *Server) InProcessConn() (net.Conn, error) {
	ns := s.live.Load()
	if ns == nil {
		return nil, errors.New("nats server is not running")
	}
	return ns.InProcessConn()
}

// ClientURL returns the URL TCP clients connect to, or "" without a
// listener.
func (s *Server) ClientURL() string {
	if s.opts.Listen == "" {
		return ""
	}
	ns := s.live.Load()
	if ns == nil {
		return ""
	}
	return ns.ClientURL()
}

// Restart shuts the server down and starts it again on the same store and
// port, as a process restart would (the file store is reopened).
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ns := s.live.Swap(nil); ns != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
	}
	return s.start()
}

// Shutdown stops the server gracefully. It is safe to call twice.
func (s *Server) Shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ns := s.live.Swap(nil); ns != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
	}
}

// logAdapter forwards server log lines to zerolog.
type logAdapter struct{ l zerolog.Logger }

func (a *logAdapter) Noticef(format string, v ...any) { a.l.Debug().Msgf(format, v...) }
func (a *logAdapter) Warnf(format string, v ...any)   { a.l.Warn().Msgf(format, v...) }
func (a *logAdapter) Fatalf(format string, v ...any)  { a.l.Error().Msgf(format, v...) }
func (a *logAdapter) Errorf(format string, v ...any)  { a.l.Error().Msgf(format, v...) }
func (a *logAdapter) Debugf(format string, v ...any)  { a.l.Debug().Msgf(format, v...) }
func (a *logAdapter) Tracef(format string, v ...any)  { a.l.Trace().Msgf(format, v...) }
