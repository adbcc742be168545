package httpcall

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Sentinels of a Response's Err.
var (
	// ErrTimeout: no answer within the attempt's timeout.
	ErrTimeout = errors.New("attempt timed out")
	// ErrTooLarge: an answer longer than the Sender's MaxBody.
	ErrTooLarge = errors.New("answer too large")
)

// Request is one HTTP request, sent as often as retries need.
type Request struct {
	Method string
	URL    string
	Header http.Header // sent as is (cloned per attempt)
	Host   string      // overrides the URL's host in the Host header when set
	Body   []byte
}

// Response is the outcome of one attempt.
type Response struct {
	// Status is the answer's HTTP status; 0 when no answer came.
	Status int
	Header http.Header
	// Body is the answer, at most MaxBody bytes.
	Body []byte
	// Start is when the request was sent (after the waits for a slot and
	// the Limiter); Elapsed runs from Start to the answer read, or to the
	// failure.
	Start   time.Time
	Elapsed time.Duration
	// Err is why no answer was read in full: a transport error, ErrTimeout
	// (a *TimeoutError), or ErrTooLarge. nil when an answer came, whatever
	// its status. It may hold a secret (a URL): redact before showing it.
	Err error
	// Retryable: Err is a failure that may pass on retry (a timeout, a
	// refused or reset connection, a cut answer; not a certificate error,
	// an unknown host or an answer too large).
	Retryable bool
	// Stop is set when the attempt did not happen or must not be
	// retried: ctx ended (ctx's error) or the Limiter failed. Nothing else
	// is set then.
	Stop error
}

// TimeoutError is the Err of an attempt that got no answer within the
// timeout. It unwraps to ErrTimeout.
type TimeoutError struct{ Timeout time.Duration }

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("no answer within the timeout of %s", e.Timeout)
}

func (e *TimeoutError) Unwrap() error { return ErrTimeout }

// SenderOptions configure a Sender.
type SenderOptions struct {
	// HTTP sends the requests; nil means a client of the Sender's own
	// whose transport keeps Concurrency idle connections per host (Close
	// releases them). Its Timeout should be 0: Timeout applies per attempt.
	HTTP *http.Client
	// Limiter is waited on before every attempt; nil means no limit.
	Limiter Limiter
	// Concurrency bounds the attempts in flight at once (at least 1).
	Concurrency int
	// Timeout bounds each attempt, from sending to the answer read.
	Timeout time.Duration
	// MaxBody bounds an answer's body (at least 1).
	MaxBody int64
}

// Sender makes attempts of requests to one service. It is safe for
// concurrent use: at most Concurrency attempts are in flight at once, a
// slot held from before the Limiter's wait to the answer read.
type Sender struct {
	http    *http.Client
	own     *http.Transport // the transport NewSender made, if any
	limiter Limiter
	sem     chan struct{}
	timeout time.Duration
	maxBody int64
}

// NewSender returns a Sender; o.Concurrency, o.Timeout and o.MaxBody must
// be positive.
func NewSender(o SenderOptions) (*Sender, error) {
	if o.Concurrency < 1 || o.Timeout <= 0 || o.MaxBody < 1 {
		return nil, fmt.Errorf("new sender: concurrency %d, timeout %s, max body %d: want all positive", o.Concurrency, o.Timeout, o.MaxBody)
	}
	s := &Sender{http: o.HTTP, limiter: o.Limiter, sem: make(chan struct{}, o.Concurrency), timeout: o.Timeout, maxBody: o.MaxBody}
	if s.http == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = o.Concurrency
		t.MaxIdleConns = max(t.MaxIdleConns, 2*o.Concurrency)
		s.own, s.http = t, &http.Client{Transport: t}
	}
	if s.limiter == nil {
		s.limiter = NewLocalLimiter(0)
	}
	return s, nil
}

// Close releases the idle connections of the Sender's own transport. The
// Sender stays usable.
func (s *Sender) Close() {
	if s.own != nil {
		s.own.CloseIdleConnections()
	}
}

// Send makes one attempt: a concurrency slot, the Limiter, then the
// request within the timeout, its answer read in full.
func (s *Sender) Send(ctx context.Context, req Request) Response {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return Response{Stop: ctx.Err()}
	}
	defer func() { <-s.sem }()
	if err := s.limiter.Wait(ctx); err != nil {
		if ctx.Err() != nil {
			return Response{Stop: ctx.Err()}
		}
		return Response{Stop: fmt.Errorf("wait for the rate limit: %w", err)}
	}
	actx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	var r Response
	hreq, err := http.NewRequestWithContext(actx, req.Method, req.URL, bytes.NewReader(req.Body))
	if err != nil {
		r.Err = err
		return r
	}
	hreq.Header = req.Header.Clone()
	if req.Host != "" {
		hreq.Host = req.Host
	}
	r.Start = time.Now()
	resp, err := s.http.Do(hreq)
	if err != nil {
		return s.transportFailure(ctx, actx, r, err)
	}
	r.Status, r.Header = resp.StatusCode, resp.Header
	r.Body, err = readBody(resp.Body, s.maxBody)
	resp.Body.Close()
	r.Elapsed = time.Since(r.Start)
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			r.Err = err
			return r
		}
		return s.transportFailure(ctx, actx, r, err)
	}
	return r
}

// transportFailure classifies an error from sending or reading.
func (s *Sender) transportFailure(ctx, actx context.Context, r Response, err error) Response {
	r.Elapsed = time.Since(r.Start)
	switch {
	case ctx.Err() != nil:
		return Response{Stop: ctx.Err()}
	case actx.Err() != nil:
		r.Err, r.Retryable = &TimeoutError{s.timeout}, true
	default:
		r.Err, r.Retryable = err, transient(err)
	}
	return r
}

// transient reports whether a transport error may pass on retry: all do
// but certificate errors, an unknown host and an invalid request.
func transient(err error) bool {
	var (
		unknownAuthority x509.UnknownAuthorityError
		hostname         x509.HostnameError
		invalid          x509.CertificateInvalidError
		record           tls.RecordHeaderError
		dns              *net.DNSError
	)
	switch {
	case errors.As(err, &unknownAuthority), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &record):
		return false
	case errors.As(err, &dns):
		return !dns.IsNotFound
	}
	return !strings.Contains(err.Error(), "unsupported protocol scheme")
}

// readBody reads an answer, at most limit bytes.
func readBody(r io.Reader, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return b, err
	}
	if int64(len(b)) > limit {
		return b[:limit], fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	}
	return b, nil
}
