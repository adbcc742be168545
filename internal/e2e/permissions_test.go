package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/internal/embedded"
	"github.com/evalgate/evalgate/internal/jsq"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/summary"
)

// serverLog keeps the lines a server logs.
type serverLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *serverLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, string(p))
	return len(p), nil
}

// violations returns the permission violations logged so far.
func (l *serverLog) violations() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(strings.ToLower(line), "violation") {
			out = append(out, line)
		}
	}
	return out
}

// freePort returns a loopback address with a port free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// scrape returns the value of every sample of the Prometheus text at url,
// by its series ("name{labels}").
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

var permissionDenied = regexp.MustCompile(`(?i)permissions? violation`)

// TestLeastPrivilegeUsers runs evalgate under the users of `evalgate
// server --print-config`: a server configured by it, a worker process as
// "worker", coordinators as "coordinator" running a score job (kept in the
// JetStream history) and a live retrieval job (rate-limited across
// workers) and a judge job (LLM rate shared, judgments cached), and status
// and history as "status". The score and live jobs give the bits
// of single-process scoring, the server logs no permission violation for
// any of it, the worker's metrics counted the work — and the worker user
// is refused a purge of the task stream, a task, a bucket deletion; the
// status user any write.
func TestLeastPrivilegeUsers(t *testing.T) {
	dir := t.TempDir()
	passwords := map[jsq.Role]string{jsq.RoleCoordinator: "c00rd", jsq.RoleWorker: "w0rker", jsq.RoleStatus: "st4tus"}
	conf, errs, code := cli(t, "server", "--print-config", "--store", filepath.Join(dir, "store"),
		"--coordinator-password", passwords[jsq.RoleCoordinator], "--worker-password", passwords[jsq.RoleWorker],
		"--status-password", passwords[jsq.RoleStatus])
	if code != 0 || !strings.Contains(conf, "accounts {") {
		t.Fatalf("server --print-config: exit %d\n%s\n%s", code, conf, errs)
	}
	confPath := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs serverLog
	log := zerolog.New(&logs)
	s, err := embedded.Start(embedded.Options{StoreDir: filepath.Join(dir, "store"), Listen: "127.0.0.1:-1", ConfigFile: confPath, Logger: &log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	url := s.ClientURL()
	as := func(r jsq.Role) []string { return []string{"--nats-user", string(r), "--nats-password", passwords[r]} }

	gold, run := genData(t, 800, schema.FormatJSONL, true)
	search := newRunSearch(t, gold, run)
	ts := httptest.NewServer(search)
	defer ts.Close()
	retr := retrieverFile(t, ts.URL, "rate: 2000\n")
	ref := func(args ...string) *summary.Summary {
		out, errs, code := cli(t, append([]string{"score", "--gold", gold, "-f", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("score: exit %d\n%s", code, errs)
		}
		sum, err := summary.ReadJSON(strings.NewReader(out))
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	want := scored(t, ref("--run", run))

	// The worker starts first: it waits for the coordinator to create the
	// streams, which its user may not.
	metricsAddr := freePort(t)
	w := liveWorkerProc(t, url, 2, "EVALGATE_NATS_USER=worker", "EVALGATE_NATS_PASSWORD="+passwords[jsq.RoleWorker],
		"EVALGATE_METRICS_LISTEN="+metricsAddr)
	coordinate := func(args ...string) *summary.Summary {
		t.Helper()
		args = append(append([]string{"run", "--nats", url, "--workers", "0", "--gold", gold, "--progress", "off", "-f", "json",
			"--timeout", "2m"}, as(jsq.RoleCoordinator)...), args...)
		out, errs, code := cli(t, args...)
		if code != 0 {
			t.Fatalf("run %q: exit %d\n%s\n%s", args, code, out, errs)
		}
		sum, err := summary.ReadJSON(strings.NewReader(out))
		if err != nil {
			t.Fatalf("run output: %v\n%s", err, out)
		}
		return sum
	}
	if got := scored(t, coordinate("--run", run, "--history", "jetstream")); got != want {
		t.Fatalf("score job as the least-privilege users differs from single-process scoring:\n%s\nwant\n%s", got, want)
	}
	live := coordinate("--retriever", retr)
	if got := scored(t, live); got != want {
		t.Fatalf("live job as the least-privilege users differs from scoring the run:\n%s\nwant\n%s", got, want)
	}
	// A judge job: the LLM's rate shared through the limits bucket, the
	// judgments cached in EVALGATE_JUDGMENTS.
	chat := &chatServer{perPair: map[string]int{}}
	cs := httptest.NewServer(chat)
	defer cs.Close()
	jf := judgeFixture(t, gold, run, cs.URL, nil)
	if f, err := os.OpenFile(jf.Judge.LLM.File, os.O_APPEND|os.O_WRONLY, 0); err != nil {
		t.Fatal(err)
	} else {
		fmt.Fprintln(f, "rate: 2000")
		f.Close()
	}
	judgments := filepath.Join(dir, "judgments.jsonl")
	out, errs, code := cli(t, append([]string{"judge", "--nats", url, "--workers", "0", "--gold", gold, "--run", run, "--corpus", jf.Judge.Corpus,
		"--llm", jf.Judge.LLM.File, "--depth", "3", "--out", judgments, "--progress", "off", "--timeout", "2m"}, as(jsq.RoleCoordinator)...)...)
	if b, err := os.ReadFile(judgments); code != 0 || err != nil || len(b) == 0 {
		t.Fatalf("judge as the coordinator user: exit %d (%v)\n%s\n%s", code, err, out, errs)
	}
	out, errs, code = cli(t, append([]string{"status", "--nats", url}, as(jsq.RoleStatus)...)...)
	if code != 0 || strings.Count(out, " done ") != 3 || !strings.Contains(out, "workers seen in the last 30s: 1") {
		t.Fatalf("status as the status user: exit %d\n%s\n%s", code, out, errs)
	}
	out, errs, code = cli(t, append([]string{"history", "--nats", url, "--history", "jetstream"}, as(jsq.RoleStatus)...)...)
	if code != 0 || !strings.Contains(out, "1 run") {
		t.Fatalf("history as the status user: exit %d\n%s\n%s", code, out, errs)
	}
	if v := logs.violations(); len(v) > 0 {
		t.Fatalf("the server refused evalgate's own calls under the printed permissions:\n%s", strings.Join(v, ""))
	}

	// The worker's metrics saw both jobs, and it is ready.
	m := scrape(t, "http://"+metricsAddr+"/metrics")
	if m[`evalgate_worker_tasks_done_total{kind="score"}`] < 1 || m[`evalgate_worker_queries_scored_total{kind="score"}`] < 800 {
		t.Errorf("score tasks not counted: %v", m)
	}
	if got := m[`evalgate_worker_queries_scored_total{kind="retrieve"}`]; got != 800 {
		t.Errorf("%v queries counted for the retrieve tasks, want the 800 gold queries", got)
	}
	if got := m[`evalgate_retriever_request_duration_seconds_count{class="2xx",step="search"}`]; got != 800 {
		t.Errorf("%v retriever requests counted, want 800", got)
	}
	if m[`evalgate_worker_queries_scored_total{kind="judge"}`] < 1 || m[`evalgate_llm_request_duration_seconds_count{class="2xx"}`] < 1 ||
		m[`evalgate_llm_tokens_total{type="prompt"}`] != 100*m[`evalgate_llm_request_duration_seconds_count{class="2xx"}`] {
		t.Errorf("judge tasks or LLM requests not counted: %v", m)
	}
	if m[`evalgate_worker_tasks_failed_total{final="true",kind="score"}`] != 0 || m["evalgate_nats_connected"] != 1 {
		t.Errorf("failures or a lost connection reported: %v", m)
	}
	resp, err := http.Get("http://" + metricsAddr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("worker /readyz: %d %s", resp.StatusCode, body)
	}

	// What the worker and status users may not do.
	ctx := context.Background()
	connectAs := func(r jsq.Role) *jsq.Conn {
		c, err := jsq.Connect(ctx, jsq.Options{URL: url, User: string(r), Password: passwords[r], Logger: logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	job := live.Execution.Job
	refused := func(who, what string, do func(ctx context.Context) error) {
		t.Helper()
		// A refused JetStream request gets no answer: it fails at its
		// deadline, with the violation the server reported attached.
		tctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		if err := do(tctx); err == nil || !permissionDenied.MatchString(err.Error()) {
			t.Errorf("%s %s: %v, want a permissions violation", who, what, err)
		}
	}
	for _, r := range []jsq.Role{jsq.RoleWorker, jsq.RoleStatus} {
		c := connectAs(r)
		refused(string(r), "purging the task stream", c.Faults().PurgeTaskStream)
		refused(string(r), "purging a job's tasks", func(ctx context.Context) error { return c.PurgeJob(ctx, job) })
		refused(string(r), "publishing a task", func(ctx context.Context) error {
			_, err := c.PublishTask(ctx, coordinator.TaskSpec{Job: job, ID: "999999-0000", Payload: []byte("x"), Digest: "x"})
			return err
		})
		refused(string(r), "deleting the worker registry", c.Faults().DropWorkerRegistry)
	}
	st := connectAs(jsq.RoleStatus)
	refused("status", "storing a manifest", func(ctx context.Context) error {
		return st.PutManifest(ctx, &coordinator.Manifest{Job: "mallory"})
	})
	if _, err := st.ListManifests(ctx); err != nil {
		t.Errorf("status cannot list jobs after its refusals: %v", err)
	}
	if jt, err := connectAs(jsq.RoleCoordinator).Tasks(ctx, job); err != nil || len(jt.Done) == 0 {
		t.Errorf("the job's results after the refusals: %+v, %v", jt, err)
	}
	if w.ProcessState != nil {
		t.Fatalf("the worker exited: %v", w.ProcessState)
	}
}
