package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/evalgate/evalgate/examples/retriever/internal/testcorpus"
)

// TestMain runs the command itself when the tests start it as a process.
func TestMain(m *testing.M) {
	if os.Getenv("RETRIEVER_RUN_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func smallCorpus(t *testing.T) string {
	t.Helper()
	p, err := testcorpus.Write(t.TempDir(), 200)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// syncBuffer is a log sink safe for the service's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func getJSON(t *testing.T, url string) map[string]any {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return v
}

// The service serves until its context ends, then stops cleanly (exit 0),
// logging JSON lines.
func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	ready, done := make(chan string, 1), make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--corpus", smallCorpus(t), "--listen", "127.0.0.1:0"}, &logs, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case code := <-done:
		t.Fatalf("exit %d before serving: %s", code, logs.String())
	}
	v := getJSON(t, "http://"+addr+"/search?q=quokka+habitat+survey&mode=candidate")
	if hits := v["hits"].([]any); len(hits) == 0 || hits[0].(map[string]any)["id"] != "quokka-survey" {
		t.Fatalf("search: %v", v)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("exit %d after cancel: %s", code, logs.String())
	}
	var messages []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var l struct{ Message, Level string }
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		messages = append(messages, l.Message)
	}
	if got := strings.Join(messages, ","); got != "indexed corpus,serving,shutting down: finishing requests in flight,stopped" {
		t.Fatalf("log messages %s", got)
	}
}

// SIGTERM stops the process cleanly, exit 0.
func TestSIGTERMStopsCleanly(t *testing.T) {
	cmd := exec.Command(os.Args[0], "--corpus", smallCorpus(t), "--listen", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "RETRIEVER_RUN_MAIN=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stderr)
	var addr string
	var seen []string
	for addr == "" && lines.Scan() {
		seen = append(seen, lines.Text())
		var l struct{ Message, Addr string }
		if json.Unmarshal(lines.Bytes(), &l) == nil && l.Message == "serving" {
			addr = l.Addr
		}
	}
	if addr == "" {
		t.Fatalf("the service did not say where it serves: %s", strings.Join(seen, "\n"))
	}
	if v := getJSON(t, "http://"+addr+"/healthz"); v["status"] != "ok" {
		t.Fatalf("healthz: %v", v)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stderr)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after SIGTERM: %v: %s", err, rest)
	}
	if !strings.Contains(string(rest), `"message":"stopped"`) {
		t.Fatalf("no stopped line: %s", rest)
	}
	if _, err := http.Get("http://" + addr + "/healthz"); err == nil {
		t.Fatal("still serving after exit")
	}
}

func TestUsage(t *testing.T) {
	corpus := smallCorpus(t)
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(bad, []byte("{\"title\": \"no id\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "give --corpus"},
		{[]string{"--corpus"}, 2, "flag needs an argument"},
		{[]string{"--frobnicate"}, 2, "flag provided but not defined"},
		{[]string{"--corpus", corpus, "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"--corpus", corpus, "--log-level", "loud"}, 2, `--log-level "loud"`},
		{[]string{"--corpus", filepath.Join(t.TempDir(), "none.jsonl")}, 2, "no such file"},
		{[]string{"--corpus", bad}, 2, "bad.jsonl:1: no document id"},
		{[]string{"--corpus", corpus, "--listen", "256.0.0.1:1"}, 1, "listen"},
		{[]string{"--corpus", corpus, "--index", t.TempDir()}, 2, "not an index of this service"},
		{[]string{"--help"}, 0, "Usage: retriever --corpus"},
	} {
		var logs syncBuffer
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		code := run(ctx, c.args, &logs, nil)
		cancel()
		if code != c.code || !strings.Contains(logs.String(), c.want) {
			t.Errorf("%q: exit %d, want %d and %q in:\n%s", c.args, code, c.code, c.want, logs.String())
		}
	}
}

// A cancelled start (a signal while indexing) is a clean stop.
func TestCancelWhileIndexing(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var logs syncBuffer
	dir := filepath.Join(t.TempDir(), "idx")
	if code := run(ctx, []string{"--corpus", smallCorpus(t), "--index", dir}, &logs, nil); code != 0 || !strings.Contains(logs.String(), "stopped while indexing") {
		t.Fatalf("exit %d: %s", code, logs.String())
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("index directory after a cancelled build: %v", err)
	}
}
