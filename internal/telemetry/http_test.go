package telemetry

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

func TestListenAddress(t *testing.T) {
	for in, want := range map[string]string{
		"9180":             "127.0.0.1:9180",
		":9180":            "127.0.0.1:9180",
		"0.0.0.0:9180":     "0.0.0.0:9180",
		"localhost:0":      "localhost:0",
		"[::1]:9180":       "[::1]:9180",
		"metrics.internal": "",
		"127.0.0.1:99999":  "",
		"":                 "",
	} {
		got, err := ListenAddress(in)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("ListenAddress(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestServeProbesAndMetrics: the listener serves the metrics, a health
// probe that always answers and a readiness probe that follows the
// readiness function, and Close stops it.
func TestServeProbesAndMetrics(t *testing.T) {
	m := New(Build{Version: "v9.9.9"})
	m.Worker(3)
	var ready atomic.Bool
	s, err := Listen("127.0.0.1:0", m, func() error {
		if !ready.Load() {
			return errors.New("consumer not bound")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + s.Addr()
	code, body := get(t, base+PathMetrics)
	if code != 200 || !strings.Contains(body, `evalgate_build_info{goversion="go`) || !strings.Contains(body, `version="v9.9.9"`) ||
		!strings.Contains(body, "evalgate_worker_slots 3") || !strings.Contains(body, "go_goroutines") {
		t.Errorf("%s: %d\n%s", PathMetrics, code, body)
	}
	if code, body := get(t, base+PathHealth); code != 200 {
		t.Errorf("%s: %d %s", PathHealth, code, body)
	}
	if code, body := get(t, base+PathReady); code != http.StatusServiceUnavailable || !strings.Contains(body, "consumer not bound") {
		t.Errorf("%s before ready: %d %s", PathReady, code, body)
	}
	ready.Store(true)
	if code, body := get(t, base+PathReady); code != 200 {
		t.Errorf("%s when ready: %d %s", PathReady, code, body)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(base + PathHealth); err == nil {
		t.Error("still serving after Close")
	}
}

// TestListenRefusesBusyPort: a port in use is an error at once, not a
// goroutine that fails later.
func TestListenRefusesBusyPort(t *testing.T) {
	m := New(Build{})
	s, err := Listen("127.0.0.1:0", m, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s2, err := Listen(s.Addr(), m, nil); err == nil {
		s2.Close()
		t.Fatalf("a second listener on %s started", s.Addr())
	}
}
