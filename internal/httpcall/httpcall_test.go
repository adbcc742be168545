package httpcall

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalgate/evalgate/internal/secret"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"0":                             0,
		" 7 ":                           7 * time.Second,
		"99999999999999999999":          (1 << 32) * time.Second,
		"Fri, 01 May 2026 12:00:30 GMT": 30 * time.Second,
		"Fri, 01 May 2026 11:00:00 GMT": 0, // in the past: now
	} {
		got, ok := ParseRetryAfter(in, now)
		if !ok || got != want {
			t.Errorf("%q: %s %v, want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "-1", "soon", "1.5"} {
		if _, ok := ParseRetryAfter(in, now); ok {
			t.Errorf("%q: accepted", in)
		}
	}
}

// TestBackoffBounds: every delay lies in [0, min(Max, Base·2^(n-1))],
// also for retry numbers whose doubling would overflow.
func TestBackoffBounds(t *testing.T) {
	b := Backoff{Base: 250 * time.Millisecond, Max: 10 * time.Second}
	for n := 0; n <= 100; n++ {
		ceiling := b.Max
		if n <= 6 {
			ceiling = b.Base << max(n-1, 0)
		}
		var top time.Duration
		for range 200 {
			d := b.Delay(n)
			if d < 0 || d > ceiling {
				t.Fatalf("retry %d: delay %s outside [0, %s]", n, d, ceiling)
			}
			top = max(top, d)
		}
		if top < ceiling/4 {
			t.Errorf("retry %d: largest of 200 delays %s, ceiling %s: not spread", n, top, ceiling)
		}
	}
	if d := (Backoff{}).Delay(3); d != 0 {
		t.Errorf("zero backoff waits %s", d)
	}
}

func TestLocalLimiterCancel(t *testing.T) {
	l := NewLocalLimiter(1)
	if err := l.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait = %v, want the context's error", err)
	}
	if err := NewLocalLimiter(0).Wait(context.Background()); err != nil {
		t.Errorf("unlimited: %v", err)
	}
}

// TestLocalLimiterSpacing: 20 waits at 100/s take at least 190 ms.
func TestLocalLimiterSpacing(t *testing.T) {
	l := NewLocalLimiter(100)
	start := time.Now()
	for range 20 {
		if err := l.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 190*time.Millisecond {
		t.Errorf("20 requests at 100/s in %s", d)
	}
}

func TestExcerpt(t *testing.T) {
	r := secret.NewRedactor([]string{"sk-0123456789"})
	body := []byte(strings.Repeat("a", 195) + "sk-0123456789" + "tail")
	if got := Excerpt(body, 200, r); got != strings.Repeat("a", 195)+"[reda" {
		t.Errorf("excerpt %q: a secret across the cut must be redacted whole", got)
	}
	if got := Excerpt([]byte("short"), 200, nil); got != "short" {
		t.Errorf("excerpt %q", got)
	}
	if got := TruncateUTF8("ééé", 5); got != "éé" {
		t.Errorf("TruncateUTF8 cut inside a rune: %q", got)
	}
}

func TestValidHeaderName(t *testing.T) {
	for _, s := range []string{"api-key", "Authorization", "X-Custom_1", "OpenAI-Project"} {
		if !ValidHeaderName(s) {
			t.Errorf("%q refused", s)
		}
	}
	for _, s := range []string{"", "a b", "x:y", "é", "a\n"} {
		if ValidHeaderName(s) {
			t.Errorf("%q accepted", s)
		}
	}
}

// TestSender: answers of any status come back whole; a timeout, a refused
// connection and an answer too large are classified; at most Concurrency
// attempts reach the server at once. The attempts counted are the /busy
// ones: the handler of an attempt that timed out may still run for a
// while after the client gave up (until the server notices the closed
// connection), and the slot of that attempt is free by then.
func TestSender(t *testing.T) {
	var mu sync.Mutex
	inFlight, peak := 0, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/busy" {
			mu.Lock()
			inFlight++
			peak = max(peak, inFlight)
			mu.Unlock()
			defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
		}
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/slow":
			select {
			case <-time.After(2 * time.Second):
			case <-r.Context().Done():
			}
		case "/big":
			io.WriteString(w, strings.Repeat("x", 2000))
		case "/busy":
			time.Sleep(20 * time.Millisecond)
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(429)
			w.Write(body)
		default:
			w.Write([]byte(r.Method + " " + r.Header.Get("X-Test") + " " + r.Host + " " + string(body)))
		}
	}))
	defer srv.Close()
	s, err := NewSender(SenderOptions{Concurrency: 2, Timeout: 200 * time.Millisecond, MaxBody: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()

	r := s.Send(ctx, Request{Method: "POST", URL: srv.URL + "/echo", Header: http.Header{"X-Test": {"v"}}, Host: "judge.local", Body: []byte("hi")})
	if r.Err != nil || r.Stop != nil || r.Status != 200 || string(r.Body) != "POST v judge.local hi" || r.Elapsed <= 0 || r.Start.IsZero() {
		t.Errorf("echo: %+v", r)
	}
	r = s.Send(ctx, Request{Method: "POST", URL: srv.URL + "/busy", Body: []byte("again")})
	if r.Err != nil || r.Status != 429 || r.Header.Get("Retry-After") != "3" || string(r.Body) != "again" {
		t.Errorf("429: %+v", r)
	}
	r = s.Send(ctx, Request{Method: "GET", URL: srv.URL + "/slow"})
	if !errors.Is(r.Err, ErrTimeout) || !r.Retryable || r.Status != 0 || r.Err.Error() != "no answer within the timeout of 200ms" {
		t.Errorf("timeout: %+v", r)
	}
	r = s.Send(ctx, Request{Method: "GET", URL: srv.URL + "/big"})
	if !errors.Is(r.Err, ErrTooLarge) || r.Retryable || r.Status != 200 || len(r.Body) != 1000 {
		t.Errorf("too large: status %d, %d bytes, %v, retryable %v", r.Status, len(r.Body), r.Err, r.Retryable)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if r = s.Send(cctx, Request{Method: "GET", URL: srv.URL}); !errors.Is(r.Stop, context.Canceled) || r.Err != nil {
		t.Errorf("cancelled: %+v", r)
	}

	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() { s.Send(ctx, Request{Method: "GET", URL: srv.URL + "/busy"}) })
	}
	wg.Wait()
	if peak > 2 {
		t.Errorf("%d attempts in flight at once, concurrency 2", peak)
	}

	closed := httptest.NewServer(http.NotFoundHandler())
	url := closed.URL
	closed.Close()
	if r = s.Send(ctx, Request{Method: "GET", URL: url}); r.Err == nil || !r.Retryable || r.Status != 0 {
		t.Errorf("refused: %+v", r)
	}
	if r = s.Send(ctx, Request{Method: "GET", URL: "ftp://x/y"}); r.Err == nil || r.Retryable {
		t.Errorf("unsupported scheme: %+v", r)
	}
}

// failingLimiter fails every wait.
type failingLimiter struct{}

func (failingLimiter) Wait(context.Context) error { return errors.New("bucket gone") }

func TestSenderLimiterFails(t *testing.T) {
	s, err := NewSender(SenderOptions{Limiter: failingLimiter{}, Concurrency: 1, Timeout: time.Second, MaxBody: 10})
	if err != nil {
		t.Fatal(err)
	}
	r := s.Send(context.Background(), Request{Method: "GET", URL: "http://127.0.0.1:1/"})
	if r.Stop == nil || r.Stop.Error() != "wait for the rate limit: bucket gone" {
		t.Errorf("stop %v", r.Stop)
	}
	if _, err := NewSender(SenderOptions{Concurrency: 0, Timeout: time.Second, MaxBody: 1}); err == nil {
		t.Error("concurrency 0 accepted")
	}
}

func TestStatusClass(t *testing.T) {
	for status, want := range map[int]string{0: "error", 99: "error", 200: "2xx", 302: "3xx", 429: "4xx", 503: "5xx", 600: "error"} {
		if got := StatusClass(status); got != want {
			t.Errorf("StatusClass(%d) = %q, want %q", status, got, want)
		}
	}
}
