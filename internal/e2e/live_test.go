package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/internal/embedded"
	"github.com/evalgate/evalgate/retrieval"
	"github.com/evalgate/evalgate/retriever"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/summary"
)

// runSearch is a search service whose answers are a run file's rankings:
// asked for a query's text, it answers the query's documents in the order
// the join ranks them (score descending, doc id descending), as a JSON
// list of hits. fail makes some queries answer HTTP 500.
type runSearch struct {
	byText   map[string][]hit
	requests atomic.Int64
	delay    time.Duration // before each answer
	mu       sync.Mutex
	fail     map[string]bool // query texts answered with 500
	// What the server saw, per request: when it came and from which
	// worker (the X-Worker header), and the most requests in flight per
	// worker.
	arrivals []time.Time
	inFlight map[string]int
	peak     map[string]int
}

type hit struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

// newRunSearch reads a gold set's query texts and a run's rankings.
func newRunSearch(t testing.TB, gold, run string) *runSearch {
	t.Helper()
	texts := map[string]string{} // query id -> text
	data, err := os.ReadFile(gold)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var g struct {
			ID   string `json:"query_id"`
			Text string `json:"query"`
		}
		if err := json.Unmarshal([]byte(line), &g); err != nil {
			t.Fatal(err)
		}
		texts[g.ID] = g.Text
	}
	s := &runSearch{byText: map[string][]hit{}, fail: map[string]bool{}}
	r, err := schema.Open(context.Background(), run, schema.RoleRun, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		b, err := r.Next(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if b.Form != schema.FormRunList {
			t.Fatalf("the test search reads list-form runs, got %s", b.Form)
		}
		rec := b.Record
		for i := 0; i < int(rec.NumRows()); i++ {
			qid, docs, scores := listRow(rec, i)
			hits := make([]hit, len(docs))
			for j := range docs {
				hits[j] = hit{docs[j], scores[j]}
			}
			slices.SortStableFunc(hits, func(a, b hit) int {
				if a.Score != b.Score {
					if a.Score > b.Score {
						return -1
					}
					return 1
				}
				return strings.Compare(b.ID, a.ID)
			})
			s.byText[texts[qid]] = hits
		}
		b.Release()
	}
	return s
}

func (s *runSearch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	q := r.URL.Query().Get("q")
	worker := r.Header.Get("X-Worker")
	s.mu.Lock()
	fail := s.fail[q]
	s.arrivals = append(s.arrivals, time.Now())
	if s.inFlight == nil {
		s.inFlight, s.peak = map[string]int{}, map[string]int{}
	}
	s.inFlight[worker]++
	s.peak[worker] = max(s.peak[worker], s.inFlight[worker])
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight[worker]--
		s.mu.Unlock()
	}()
	time.Sleep(s.delay)
	if fail {
		http.Error(w, `{"error":"index shard unavailable"}`, http.StatusInternalServerError)
		return
	}
	k, _ := strconv.Atoi(r.URL.Query().Get("k"))
	hits := s.byText[q]
	if k > 0 && len(hits) > k {
		hits = hits[:k]
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"hits": hits})
}

// retrieverFile writes a retriever file for the search service at url.
func retrieverFile(t testing.TB, url string, extra string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "search.yaml")
	body := fmt.Sprintf("url: %s/search?q={{.Query | urlquery}}&k={{.K}}\nresults: hits\nid: id\nscore: score\nk: 100\nconcurrency: 4\nretries: 1\ntimeout: 5s\n%s", url, extra)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func liveJob(t testing.TB, gold, file string, budget retrieval.Budget) coordinator.Job {
	t.Helper()
	cfg, err := retriever.Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	j := newJob(t, gold, "")
	j.Retriever = &coordinator.Retriever{Config: cfg, Failures: budget, QueriesPerTask: 16}
	return j
}

// scored is the part of a summary that two evaluations of the same
// rankings share, whatever their inputs' names and the retrieval costs.
func scored(t *testing.T, s *summary.Summary) string {
	t.Helper()
	c := *s.Comparable()
	c.Inputs.Run = summary.Input{Digest: c.Inputs.Run.Digest}
	c.Retrieval = nil
	if c.Baseline != nil {
		b := *c.Baseline
		c.Baseline = &b
	}
	return comparable(t, &c)
}

// TestLiveRetrievalSameBits: the rankings a retriever answers, scored
// through the queue (2 workers, 7 shards) and in one process, give the
// summary that `score` gives on a run file of the same rankings, and the
// saved run replays to the same values.
func TestLiveRetrievalSameBits(t *testing.T) {
	gold, run := genData(t, 1500, schema.FormatJSONL, true)
	srv := newRunSearch(t, gold, run)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	file := retrieverFile(t, ts.URL, "")
	want := scored(t, mustScore(t, newJob(t, gold, run)))

	var saved []*retrieval.Record
	local := liveJob(t, gold, file, retrieval.Budget{})
	local.SaveRun = func(_ string, recs []*retrieval.Record) error { saved = recs; return nil }
	lo := mustScore(t, local)
	if got := scored(t, lo); got != want {
		t.Fatalf("live retrieval in one process differs from score on the run:\n%s\nwant\n%s", got, want)
	}
	if r := lo.Retrieval; r == nil || r.Answered != 1500 || r.Failed != 0 || r.Requests != 1500 || r.Latency.P50 <= 0 {
		t.Fatalf("retrieval section %+v", r)
	}
	if int(srv.requests.Load()) != 1500+1 { // and the probe
		t.Fatalf("%d requests for 1500 queries and the probe", srv.requests.Load())
	}

	// The saved run, replayed with --rank-by rank.
	savedPath := filepath.Join(t.TempDir(), "saved.jsonl")
	f, err := os.Create(savedPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := retrieval.WriteRun(f, schema.FormatJSONL, "search", saved); err != nil {
		t.Fatal(err)
	}
	f.Close()
	replay := newJob(t, gold, savedPath)
	replay.Ingest.RankBy = ingest.RankByRank
	if got := scored(t, mustScore(t, replay)); got != strings.Replace(want, `"rank_by": "score"`, `"rank_by": "rank"`, 1) {
		t.Fatalf("the saved run replays differently:\n%s\nwant\n%s", got, want)
	}

	s := startServer(t)
	startWorkers(t, s, 2, nil)
	out, err := coordinator.RunDistributed(context.Background(), liveJob(t, gold, file, retrieval.Budget{}), connect(t, s, "coordinator"),
		coordinator.DistOptions{Shards: 7})
	if err != nil {
		t.Fatal(err)
	}
	if got := scored(t, out.Summary); got != want {
		t.Fatalf("live retrieval through the queue differs from score on the run:\n%s\nwant\n%s", got, want)
	}
	if r := out.Summary.Retrieval; r.Answered != 1500 || r.Requests != 1500 || len(r.Groups) == 0 {
		t.Fatalf("distributed retrieval section %+v", r)
	}
}

// TestLiveRetrievalJudgedOnlySameBits: with bpref and --judged-only, a
// live retrieval through the queue gives the summary `score` gives on a
// run file of the same rankings, the unjudged documents dropped counted
// alike.
func TestLiveRetrievalJudgedOnlySameBits(t *testing.T) {
	gold, run := genData(t, 600, schema.FormatJSONL, true)
	ts := httptest.NewServer(newRunSearch(t, gold, run))
	defer ts.Close()
	file := retrieverFile(t, ts.URL, "")
	ref := mustScore(t, judgedOnly(newJob(t, gold, run)))
	if ref.Counts.UnjudgedDropped == 0 {
		t.Fatalf("counts %+v: no unjudged document dropped", ref.Counts)
	}
	want := scored(t, ref)
	s := startServer(t)
	startWorkers(t, s, 2, nil)
	out, err := coordinator.RunDistributed(context.Background(), judgedOnly(liveJob(t, gold, file, retrieval.Budget{})), connect(t, s, "coordinator"),
		coordinator.DistOptions{Shards: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got := scored(t, out.Summary); got != want {
		t.Fatalf("live retrieval through the queue differs from score on the run:\n%s\nwant\n%s", got, want)
	}
}

// TestLiveRetrievalFailedQueries: a query whose retries run out fails the
// job, naming it and the answer; allowed by --max-failed-queries, it scores
// 0 (as a query missing from the run) and is listed.
func TestLiveRetrievalFailedQueries(t *testing.T) {
	gold, run := genData(t, 300, schema.FormatJSONL, false)
	srv := newRunSearch(t, gold, run)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	file := retrieverFile(t, ts.URL, "")
	srv.fail["synthetic question 7"] = true
	srv.fail["synthetic question 123"] = true

	_, err := coordinator.Score(context.Background(), liveJob(t, gold, file, retrieval.Budget{Count: 1}))
	if !errors.Is(err, coordinator.ErrQueriesFailed) || !strings.Contains(err.Error(), `"q0000007"`) ||
		!strings.Contains(err.Error(), "index shard unavailable") || !strings.Contains(err.Error(), "500") {
		t.Fatalf("two failed queries with one allowed: %v", err)
	}

	out := mustScore(t, liveJob(t, gold, file, retrieval.Budget{Percent: 1, IsPercent: true}))
	r := out.Retrieval
	if r.Failed != 2 || len(r.FailedQueries) != 2 || r.FailedQueries[0].QueryID != "q0000007" || r.Answered != 298 {
		t.Fatalf("retrieval section %+v", r)
	}
	if c := out.Counts; c.MissingFromRun != 2 || c.MissingScored != 2 || c.ScoredQueries != 300 {
		t.Fatalf("counts %+v", c)
	}
	// The same values as the run without those two queries.
	data, _ := os.ReadFile(run)
	var kept []string
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if !strings.Contains(line, `"q0000007"`) && !strings.Contains(line, `"q0000123"`) {
			kept = append(kept, line)
		}
	}
	without := filepath.Join(t.TempDir(), "run.jsonl")
	if err := os.WriteFile(without, []byte(strings.Join(kept, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, want := scored(t, out), scored(t, mustScore(t, newJob(t, gold, without))); got != want {
		t.Fatalf("allowed failures do not score as missing queries:\n%s\nwant\n%s", got, want)
	}
}

func mustScore(t *testing.T, job coordinator.Job) *summary.Summary {
	t.Helper()
	out, err := coordinator.Score(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	return out.Summary
}

// listRow reads row i of a list-form run batch.
func listRow(rec arrow.Record, i int) (string, []string, []float64) {
	qid := rec.Column(0).(*array.String).Value(i)
	docList := rec.Column(1).(*array.List)
	docVals := docList.ListValues().(*array.String)
	scoreList := rec.Column(2).(*array.List)
	scoreVals := scoreList.ListValues().(*array.Float64)
	ds, de := docList.ValueOffsets(i)
	ss, _ := scoreList.ValueOffsets(i)
	docs := make([]string, 0, de-ds)
	scores := make([]float64, de-ds)
	for k := ds; k < de; k++ {
		docs = append(docs, docVals.Value(int(k)))
		if !scoreList.IsNull(i) {
			scores[k-ds] = scoreVals.Value(int(ss + k - ds))
		} else {
			scores[k-ds] = float64(de - k) // list order
		}
	}
	return qid, docs, scores
}

// liveWorkerProc starts an `evalgate worker` process with task slots and
// its own environment.
func liveWorkerProc(t testing.TB, url string, slots int, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(evalgateBin, "--log-level", "info", "--log-format", "json", "worker", "--nats", url, "--concurrency", strconv.Itoa(slots))
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			t.Logf("worker %d stderr:\n%s", cmd.Process.Pid, stderr.String())
		}
	})
	return cmd
}

// TestLiveWorkerKilledMidJob: a worker process dies by SIGKILL while its
// requests are in flight. Its task comes back after the ack wait; the
// survivor reuses the answers it stored and asks only for the rest, so the
// retriever is asked at most once per query besides the requests in flight
// at the kill, and the summary has the same values.
func TestLiveWorkerKilledMidJob(t *testing.T) {
	gold, run := genData(t, 600, schema.FormatJSONL, false)
	srv := newRunSearch(t, gold, run)
	srv.delay = 5 * time.Millisecond
	ts := httptest.NewServer(srv)
	defer ts.Close()
	file := retrieverFile(t, ts.URL, "") // concurrency 4
	want := scored(t, mustScore(t, newJob(t, gold, run)))
	srv.requests.Store(0)

	s := startServer(t)
	q := connect(t, s, "coordinator")
	doomed := liveWorkerProc(t, s.ClientURL(), 2)
	done := runAsync(context.Background(), liveJob(t, gold, file, retrieval.Budget{}), q, coordinator.DistOptions{Shards: 3})
	waitFor(t, time.Minute, "the doomed worker to be asked 150 queries", func() bool { return srv.requests.Load() >= 150 })
	_ = doomed.Process.Kill()
	if err := doomed.Wait(); !killedBySIGKILL(err) {
		t.Fatalf("the doomed worker did not die by SIGKILL: %v", err)
	}
	liveWorkerProc(t, s.ClientURL(), 2)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := scored(t, r.out.Summary); got != want {
		t.Fatalf("summary after a worker crash differs:\n%s\nwant\n%s", got, want)
	}
	// 600 queries and the probe, plus at most the 2 tasks × 4 requests in
	// flight when the worker died.
	if n := srv.requests.Load(); n > 601+8 {
		t.Fatalf("%d requests for 600 queries: answers were asked again", n)
	}
	if a := r.out.Summary.Retrieval.Answered; a != 600 {
		t.Fatalf("%d answered", a)
	}
}

// TestLiveRateLimitAcrossWorkers: three worker processes share the job's
// rate: at the server no one-second window holds more than 110% of it,
// and no worker has more requests in flight than the file's concurrency.
func TestLiveRateLimitAcrossWorkers(t *testing.T) {
	gold, run := genData(t, 300, schema.FormatJSONL, false)
	srv := newRunSearch(t, gold, run)
	srv.delay = 20 * time.Millisecond
	ts := httptest.NewServer(srv)
	defer ts.Close()
	const rate = 60
	file := retrieverFile(t, ts.URL, fmt.Sprintf("rate: %d\nheaders:\n  X-Worker: ${TEST_WORKER:-coordinator}\n", rate))
	// concurrency 4 in the file: each worker holds 3 tasks at once, so its
	// tasks compete for the same 4 slots.
	s := startServer(t)
	q := connect(t, s, "coordinator")
	for i := range 3 {
		liveWorkerProc(t, s.ClientURL(), 3, fmt.Sprintf("TEST_WORKER=w%d", i))
	}
	r := <-runAsync(context.Background(), liveJob(t, gold, file, retrieval.Budget{}), q, coordinator.DistOptions{Shards: 5})
	if r.err != nil {
		t.Fatal(r.err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if most := maxInWindow(srv.arrivals, time.Second); most > rate*11/10 {
		t.Fatalf("%d requests in one second at the server, rate %d", most, rate)
	}
	busy := 0
	for w, peak := range srv.peak {
		if peak > 4 {
			t.Errorf("worker %q had %d requests in flight, concurrency 4", w, peak)
		}
		if w != "coordinator" {
			busy++
		}
	}
	if busy < 2 {
		t.Fatalf("requests came from %v: the job did not spread over the workers", srv.peak)
	}
	t.Logf("%d requests, at most %d in a second; peak in flight per worker %v", len(srv.arrivals), maxInWindow(srv.arrivals, time.Second), srv.peak)
}

// TestLiveSecretsStayOutOfTheQueue: a retriever file's ${VAR} values reach
// the retriever (from each process's environment) and nothing that the
// queue stores: not the tasks, the answers, the results or the manifest.
func TestLiveSecretsStayOutOfTheQueue(t *testing.T) {
	gold, run := genData(t, 200, schema.FormatJSONL, false)
	srv := newRunSearch(t, gold, run)
	var tokens sync.Map
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tokens.Store(r.Header.Get("Authorization"), true)
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	const secret = "e2e-s3cr3t-value"
	t.Setenv("E2E_TOKEN", secret)
	file := retrieverFile(t, ts.URL, "headers:\n  Authorization: Bearer ${E2E_TOKEN}\n")
	store := t.TempDir()
	s, err := embedded.Start(embedded.Options{StoreDir: store, Listen: "127.0.0.1:-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	startWorkers(t, s, 2, nil)
	out, err := coordinator.RunDistributed(context.Background(), liveJob(t, gold, file, retrieval.Budget{}), connect(t, s, "coordinator"),
		coordinator.DistOptions{Shards: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tokens.Load("Bearer " + secret); !ok {
		t.Fatal("the retriever never got the token")
	}
	var b bytes.Buffer
	if err := out.Summary.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), secret) {
		t.Fatal("the summary holds the secret")
	}
	s.Shutdown() // flush the store
	found := false
	err = filepath.Walk(store, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("%s holds the secret", p)
		}
		if bytes.Contains(data, []byte("${E2E_TOKEN}")) {
			found = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		t.Fatal("the store holds no retriever file at all: the test looked in the wrong place")
	}
}

// TestLiveCoordinatorKilledAndResumed: the coordinator of a live
// retrieval dies by SIGKILL; `run --resume JOB` finishes the job asking the
// retriever only for the queries without a stored answer (the answers the
// workers stored meanwhile are reused), with the same values.
func TestLiveCoordinatorKilledAndResumed(t *testing.T) {
	gold, run := genData(t, 600, schema.FormatJSONL, false)
	srv := newRunSearch(t, gold, run)
	ts := httptest.NewServer(srv)
	defer ts.Close()
	file := retrieverFile(t, ts.URL, "")
	want := scored(t, mustScore(t, newJob(t, gold, run)))
	srv.requests.Store(0)
	srv.delay = 10 * time.Millisecond

	s := startServer(t)
	q := connect(t, s, "resumer")
	w1 := liveWorkerProc(t, s.ClientURL(), 2)
	first := exec.Command(evalgateBin, "run", "--nats", s.ClientURL(), "--workers", "0", "--gold", gold, "--retriever", file,
		"-m", strings.Join(metricNames(), ","), "--shards", "8", "--progress", "off", "-f", "json")
	first.Env = append(os.Environ(), "EVALGATE_TEST_COORDINATOR_CRASH_AFTER=3")
	var firstErr bytes.Buffer
	first.Stderr = &firstErr
	if err := first.Run(); !killedBySIGKILL(err) {
		t.Fatalf("the coordinator did not die by SIGKILL: %v\n%s", err, firstErr.String())
	}
	jobs, err := q.ListManifests(context.Background())
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs after the crash: %v, %v", jobs, err)
	}
	// The worker goes on without the coordinator; once some answers are
	// in, it dies too, with requests in flight; a new one serves the
	// resumed job.
	waitFor(t, time.Minute, "some answers", func() bool { return srv.requests.Load() > 100 })
	_ = w1.Process.Kill()
	_ = w1.Wait()
	asked := srv.requests.Load()
	if asked >= 600 {
		t.Fatalf("every query was asked before the resume (%d requests): the test lost its point", asked)
	}
	liveWorkerProc(t, s.ClientURL(), 2)
	out, errs, code := cli(t, "run", "--nats", s.ClientURL(), "--workers", "0", "--resume", jobs[0].Job, "--progress", "off", "-f", "json")
	if code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, errs)
	}
	got, err := summary.ReadJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if s := scored(t, got); s != want {
		t.Fatalf("resumed live job differs:\n%s\nwant\n%s", s, want)
	}
	// 600 queries, a probe per coordinator, and the dead worker's
	// requests in flight (2 tasks × 4).
	if n := srv.requests.Load(); n > 600+2+8 {
		t.Fatalf("%d requests for 600 queries: answers were asked again", n)
	}
}
