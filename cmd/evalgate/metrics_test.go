package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/evalgate/evalgate/internal/embedded"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServerMetrics: `server --metrics-listen` is ready once JetStream is,
// and exports the queue and the streams it created.
func TestServerMetrics(t *testing.T) {
	addr := freeAddr(t)
	p, code := startServerCmd(t, "--listen", "127.0.0.1:0", "--store", t.TempDir(), "--metrics-listen", addr)
	if p.url == "" {
		t.Fatalf("server did not start: exit %d\n%s", code, p.stderr)
	}
	if code, body := httpGet(t, "http://"+addr+"/readyz"); code != 200 {
		t.Fatalf("/readyz: %d %s", code, body)
	}
	code, body := httpGet(t, "http://"+addr+"/metrics")
	for _, want := range []string{"evalgate_queue_up 1", "evalgate_queue_tasks_pending 0", `evalgate_stream_messages{stream="EVALGATE_TASKS"} 0`,
		`evalgate_stream_bytes{stream="KV_evalgate-limits"}`, "evalgate_nats_connected 1", "evalgate_build_info{"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Fatalf("/metrics: %d, no %q:\n%s", code, want, body)
		}
	}
	if strings.Contains(body, "evalgate_worker_") {
		t.Errorf("a server exports worker metrics:\n%s", body)
	}
}

// TestWorkerMetricsProbes: a worker's /healthz answers while it waits for
// the streams, /readyz only once its consumer is bound; a bad address is
// bad usage.
func TestWorkerMetricsProbes(t *testing.T) {
	srv, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	addr := freeAddr(t)
	done := make(chan int, 1)
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		app := newApp(io.Discard, io.Discard)
		done <- report(app.RunContext(ctx, []string{"evalgate", "worker", "--nats", srv.ClientURL(), "--metrics-listen", addr}), io.Discard, app.Metadata)
	}()
	defer func() {
		stop()
		if code := <-done; code != 0 {
			t.Errorf("worker exit %d", code)
		}
	}()
	// No streams yet: alive, not ready.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz never answered: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, body := httpGet(t, "http://"+addr+"/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("/readyz without streams: %d %s", code, body)
	}
	dir := t.TempDir()
	g, r := write(t, dir, "g.qrels", goldQrels), write(t, dir, "r.trec", runTREC)
	if code, out, errs := evalgate(t, "run", "--nats", srv.ClientURL(), "--workers", "0", "--gold", g, "--run", r, "--progress", "off"); code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errs)
	}
	if code, body := httpGet(t, "http://"+addr+"/readyz"); code != 200 {
		t.Fatalf("/readyz after the job: %d %s", code, body)
	}
	if _, body := httpGet(t, "http://"+addr+"/metrics"); !strings.Contains(body, `evalgate_worker_tasks_done_total{kind="score"}`) ||
		strings.Contains(body, `evalgate_worker_tasks_done_total{kind="score"} 0`) {
		t.Fatalf("the job's tasks are not counted:\n%s", body)
	}
	if code, _, errs := evalgate(t, "worker", "--nats", srv.ClientURL(), "--metrics-listen", "localhost:http-alt"); code != exitBadInput ||
		!strings.Contains(errs, "--metrics-listen") {
		t.Errorf("bad --metrics-listen: exit %d\n%s", code, errs)
	}
}

// TestPrintConfig: --print-config writes the users with the passwords
// given, references to the environment with --env-passwords, or generated
// ones (said on stderr); --env-passwords alone is refused.
func TestPrintConfig(t *testing.T) {
	code, out, errs := evalgate(t, "server", "--print-config", "--store", "/data", "--worker-password", "w0rk", "--env-passwords")
	if code != 0 || !strings.Contains(out, `password: "w0rk"`) || !strings.Contains(out, "password: $EVALGATE_COORDINATOR_PASSWORD") ||
		!strings.Contains(out, "password: $EVALGATE_STATUS_PASSWORD") || !strings.Contains(out, `store_dir: "/data"`) || errs != "" {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = evalgate(t, "server", "--print-config", "--max-payload", "2097152")
	if code != 0 || strings.Count(out, "password: \"") != 3 || !strings.Contains(out, "max_payload: 2097152") ||
		!strings.Contains(errs, "generated the passwords of [coordinator worker status]") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	// The printed file starts a server whose users are the roles'.
	conf := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(conf, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	p, code := startServerCmd(t, "--listen", "127.0.0.1:0", "--store", t.TempDir(), "--config", conf)
	if p.url == "" {
		t.Fatalf("server with the printed configuration: exit %d\n%s", code, p.stderr)
	}
	if code, _, errs := evalgate(t, "server", "--env-passwords"); code != exitBadInput || !strings.Contains(errs, "--print-config") {
		t.Errorf("--env-passwords alone: exit %d\n%s", code, errs)
	}
}
