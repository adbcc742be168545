package jsq

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// Options are the connection settings, mirroring the standard nats.go
// options.
type Options struct {
	// URL lists servers, comma-separated ("nats://a:4222,nats://b:4222").
	URL string
	// InProcess connects without a socket to an embedded server.
	InProcess nats.InProcessConnProvider
	// Name identifies the client to the server (monitoring, logs).
	Name string

	CredsFile    string // JWT + nkey seed (.creds)
	NkeySeedFile string // nkey seed file
	User         string
	Password     string
	Token        string
	TLSCA        string // CA bundle to verify the server
	TLSCert      string // client certificate (mutual TLS)
	TLSKey       string
	TLSFirst     bool // TLS handshake before the NATS INFO (TLS-terminating proxies)

	// Nkey and SignNonce authenticate with an nkey held in memory (the
	// embedded server's internal user): the public key, and a function
	// that signs the server's nonce.
	Nkey      string
	SignNonce func(nonce []byte) ([]byte, error)

	Logger zerolog.Logger
}

// Conn is a connection to JetStream.
type Conn struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	log zerolog.Logger

	mu       sync.Mutex
	asyncErr error     // last asynchronous error (e.g. a permission violation)
	asyncAt  time.Time // when asyncErr came
	closed   chan struct{}

	obs  jetstream.ObjectStore // guarded by mu
	name string

	retries atomic.Int64 // attempts retried, see retry
}

// ErrUnauthorized is returned by Connect when the server rejects the
// credentials.
var ErrUnauthorized = errors.New("nats server rejected the credentials")

// ErrInvalidOptions is matched (with errors.Is) by the errors of Connect
// that retrying cannot cure: an unreadable credentials, nkey or TLS file,
// half a client key pair, or TLS settings that do not match the server's.
var ErrInvalidOptions = errors.New("jsq: invalid connection options")

// optionsError marks err as ErrInvalidOptions without changing its text.
type optionsError struct{ err error }

func (e optionsError) Error() string   { return e.err.Error() }
func (e optionsError) Unwrap() []error { return []error{e.err, ErrInvalidOptions} }

// Connect connects and checks that JetStream answers.
func Connect(ctx context.Context, o Options) (*Conn, error) {
	c := &Conn{log: o.Logger.With().Str("component", "jsq").Logger(), closed: make(chan struct{}), name: o.Name}
	var closeOnce sync.Once
	opts := []nats.Option{
		nats.ClosedHandler(func(*nats.Conn) { closeOnce.Do(func() { close(c.closed) }) }),
		nats.Name(o.Name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectBufSize(64 << 20),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			c.mu.Lock()
			c.asyncErr, c.asyncAt = err, time.Now()
			c.mu.Unlock()
			c.log.Warn().Err(err).Msg("nats asynchronous error")
		}),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				c.log.Info().Err(err).Msg("disconnected from nats; reconnecting")
			}
		}),
		nats.ReconnectHandler(func(*nats.Conn) { c.log.Info().Msg("reconnected to nats") }),
	}
	auth, err := clientOptions(o)
	if err != nil {
		return nil, optionsError{err}
	}
	opts = append(opts, auth...)
	url := o.URL
	if o.InProcess != nil {
		url = ""
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, connectError(o, err)
	}
	c.nc = nc
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("open jetstream: %w", err)
	}
	c.js = js
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := js.AccountInfo(actx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("check jetstream on %s: %w", where(o), c.explain(err))
	}
	return c, nil
}

// clientOptions maps the transport, credential and TLS settings of o to
// nats.go options, one for one. Files named in o are read (or at least
// checked) here, so a missing one is reported at once rather than as a
// connection failure that would be retried.
func clientOptions(o Options) ([]nats.Option, error) {
	var opts []nats.Option
	if o.InProcess != nil {
		opts = append(opts, nats.InProcessServer(o.InProcess))
	}
	if o.CredsFile != "" {
		if _, err := os.Stat(o.CredsFile); err != nil {
			return nil, fmt.Errorf("read nats credentials %s: %w", o.CredsFile, err)
		}
		opts = append(opts, nats.UserCredentials(o.CredsFile))
	}
	if o.NkeySeedFile != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NkeySeedFile)
		if err != nil {
			return nil, fmt.Errorf("read nkey seed %s: %w", o.NkeySeedFile, err)
		}
		opts = append(opts, opt)
	}
	if o.Nkey != "" {
		if o.SignNonce == nil {
			return nil, errors.New("nkey without a signing function")
		}
		opts = append(opts, nats.Nkey(o.Nkey, o.SignNonce))
	}
	if o.User != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	if o.TLSCA != "" || o.TLSCert != "" || o.TLSKey != "" {
		tc, err := tlsConfig(o)
		if err != nil {
			return nil, err
		}
		opts = append(opts, nats.Secure(tc))
	}
	if o.TLSFirst {
		opts = append(opts, nats.TLSHandshakeFirst())
	}
	return opts, nil
}

func where(o Options) string {
	if o.InProcess != nil {
		return "the embedded server"
	}
	return o.URL
}

func connectError(o Options, err error) error {
	msg := strings.ToLower(err.Error())
	switch {
	case errors.Is(err, nats.ErrAuthorization), strings.Contains(msg, "authorization violation"),
		strings.Contains(msg, "authentication"), errors.Is(err, nats.ErrAuthExpired),
		errors.Is(err, nats.ErrNkeysNotSupported): // an nkey for a server that knows none
		return fmt.Errorf("connect to %s: %w: %v", where(o), ErrUnauthorized, err)
	case errors.Is(err, nats.ErrSecureConnRequired), errors.Is(err, nats.ErrSecureConnWanted):
		return optionsError{fmt.Errorf("connect to %s: %w", where(o), err)}
	case o.InProcess != nil && (errors.Is(err, io.ErrClosedPipe) || strings.Contains(msg, "closed pipe")):
		// An in-process server closes the pipe on bad credentials.
		return fmt.Errorf("connect to %s: %w (the server closed the connection: %v)", where(o), ErrUnauthorized, err)
	}
	return fmt.Errorf("connect to %s: %w", where(o), err)
}

func tlsConfig(o Options) (*tls.Config, error) {
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return nil, errors.New("tls client certificate: give both the certificate and the key file")
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.TLSCA != "" {
		pem, err := os.ReadFile(o.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("read tls ca %s: %w", o.TLSCA, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("read tls ca %s: no certificates found", o.TLSCA)
		}
		tc.RootCAs = pool
	}
	if o.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("load tls client certificate %s: %w", o.TLSCert, err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// explainWindow is how recent an asynchronous error must be for explain to
// attach it to a timeout.
const explainWindow = time.Minute

// explain attaches a recently captured asynchronous error (a permission
// violation shows up only there; the API call itself just times out).
func (c *Conn) explain(err error) error {
	c.mu.Lock()
	async, at := c.asyncErr, c.asyncAt
	c.mu.Unlock()
	if async != nil && time.Since(at) < explainWindow && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)) {
		return fmt.Errorf("%w (server reported: %v)", err, async)
	}
	return err
}

// MaxPayload is the largest message the server accepts.
func (c *Conn) MaxPayload() int64 { return c.nc.MaxPayload() }

// Close drains and closes the connection.
func (c *Conn) Close() {
	if c == nil || c.nc == nil {
		return
	}
	if err := c.nc.Drain(); err == nil {
		select {
		case <-c.closed:
		case <-time.After(5 * time.Second):
		}
	}
	c.nc.Close()
}
