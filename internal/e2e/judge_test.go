package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/llm"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/schema"
)

// chatServer is an OpenAI-compatible chat completions server that grades
// a passage by a hash of the document id it names ("doc:<id>" in the
// passage text), and counts the requests per pair (query text and doc).
type chatServer struct {
	mu       sync.Mutex
	perPair  map[string]int
	requests atomic.Int64
	delay    time.Duration
}

var (
	docInPrompt   = regexp.MustCompile(`doc:(\S+)`)
	queryInPrompt = regexp.MustCompile(`<query>\s*(.*?)\s*</query>`)
)

func (s *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	time.Sleep(s.delay)
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error": {"message": "bad request", "type": "invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	prompt := req.Messages[len(req.Messages)-1].Content
	m := docInPrompt.FindStringSubmatch(prompt)
	doc := "probe"
	if m != nil {
		doc = m[1]
	}
	query := ""
	if q := queryInPrompt.FindStringSubmatch(prompt); q != nil {
		query = q[1]
	}
	s.mu.Lock()
	s.perPair[query+"|"+doc]++
	s.mu.Unlock()
	h := fnv.New32a()
	h.Write([]byte(doc))
	grade := h.Sum32() % 4
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": req.Model,
		"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": fmt.Sprintf(`{"grade": %d, "reason": "hash of %s"}`, grade, doc)}}},
		"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110},
	})
}

// judgeFixture writes a corpus with every document of run but the ones
// named in missing, an LLM file for srv, and returns a judge job.
func judgeFixture(t testing.TB, gold, run, url string, missing map[string]bool) coordinator.Job {
	t.Helper()
	dir := t.TempDir()
	var corpus strings.Builder
	seen := map[string]bool{}
	data, _ := os.ReadFile(run)
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct {
			Retrieved []json.RawMessage `json:"retrieved_ids"`
		}
		json.Unmarshal([]byte(line), &r)
		for _, raw := range r.Retrieved {
			var d string
			if json.Unmarshal(raw, &d) != nil {
				var o struct{ ID string }
				json.Unmarshal(raw, &o)
				d = o.ID
			}
			if !seen[d] && !missing[d] {
				seen[d] = true
				fmt.Fprintf(&corpus, `{"doc_id": %q, "title": "t", "text": "doc:%s text"}`+"\n", d, d)
			}
		}
	}
	cp := filepath.Join(dir, "corpus.jsonl")
	os.WriteFile(cp, []byte(corpus.String()), 0o644)
	lp := filepath.Join(dir, "llm.yaml")
	os.WriteFile(lp, []byte("base_url: "+url+"/v1\nmodel: test-model\nconcurrency: 4\nretries: 1\ntimeout: 5s\n"), 0o644)
	cfg, err := llm.Load(lp, nil)
	if err != nil {
		t.Fatal(err)
	}
	return coordinator.Job{
		Gold: coordinator.Input{Path: gold}, Run: coordinator.Input{Path: run},
		Metric: metric.Config{Measures: metric.DefaultMeasures(), RelLevel: 1}, Ingest: ingest.Config{RelLevel: 1},
		Judge:  &coordinator.Judge{LLM: cfg, Corpus: cp, Depth: 5, Rejudge: 40, Seed: 3},
		Logger: logger(t),
	}
}

// TestJudgeEachHoleOnce: every unjudged pair of the top 5 is graded once
// through the queue (the probe aside), documents missing from the corpus
// are reported, not judged; re-judged pairs carry their human grade and
// give an agreement; a second job pays for nothing (the cache).
func TestJudgeEachHoleOnce(t *testing.T) {
	gold, run := genData(t, 300, schema.FormatJSONL, false)
	srv := &chatServer{perPair: map[string]int{}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	job := judgeFixture(t, gold, run, ts.URL, map[string]bool{"d0000005": true})
	s := startServer(t)
	startWorkers(t, s, 2, nil)
	q := connect(t, s, "coordinator")
	out, err := coordinator.RunDistributed(context.Background(), job, q, coordinator.DistOptions{Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	jo := out.Judge
	if jo == nil || jo.Holes == 0 || len(jo.Failed) != 0 {
		t.Fatalf("outcome %+v", jo)
	}
	judged := int64(len(jo.Judgments))
	if judged != jo.Holes+jo.Rejudged-jo.MissingPairs {
		t.Fatalf("%d judgments for %d holes, %d re-judged, %d missing", judged, jo.Holes, jo.Rejudged, jo.MissingPairs)
	}
	if got := srv.requests.Load(); got != judged+1 {
		t.Fatalf("%d requests for %d pairs and the probe: a pair was asked twice", got, judged)
	}
	srv.mu.Lock()
	for pair, n := range srv.perPair {
		if n > 1 && !strings.HasSuffix(pair, "|probe") {
			t.Errorf("pair %s asked %d times", pair, n)
		}
	}
	srv.mu.Unlock()
	if jo.Rejudged != 40 || jo.Agreement == nil || jo.Agreement.Pairs != 40 {
		t.Fatalf("re-judged %d, agreement %+v", jo.Rejudged, jo.Agreement)
	}
	humans := 0
	for _, j := range jo.Judgments {
		if j.HumanGrade != nil {
			humans++
		}
		if j.Model != "test-model" || j.PromptSHA256 != llm.DefaultPromptSHA256 {
			t.Fatalf("judgment %+v", j)
		}
	}
	if humans != 40 || jo.PromptTokens != 100*judged || jo.Cached != 0 {
		t.Fatalf("%d with a human grade, %d prompt tokens, %d cached", humans, jo.PromptTokens, jo.Cached)
	}
	// Again: everything from the cache, nothing billed, the same judgments.
	before := srv.requests.Load()
	again, err := coordinator.RunDistributed(context.Background(), job, q, coordinator.DistOptions{Shards: 4})
	if err != nil {
		t.Fatal(err)
	}
	if n := srv.requests.Load() - before; n != 1 || again.Judge.Cached != judged || again.Judge.PromptTokens != 0 {
		t.Fatalf("second job: %d requests (want the probe only), %d cached, %d tokens", n, again.Judge.Cached, again.Judge.PromptTokens)
	}
	a, _ := json.Marshal(again.Judge.Judgments)
	b, _ := json.Marshal(jo.Judgments)
	if string(a) != string(b) {
		t.Fatal("the cached judgments differ")
	}
}

// TestJudgeWorkerKilledMidJob: a worker process dies by SIGKILL with
// requests in flight; the job completes with every pair graded, and no
// pair is billed twice but those in flight when the worker died.
func TestJudgeWorkerKilledMidJob(t *testing.T) {
	gold, run := genData(t, 200, schema.FormatJSONL, false)
	srv := &chatServer{perPair: map[string]int{}, delay: 10 * time.Millisecond}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	job := judgeFixture(t, gold, run, ts.URL, nil)
	job.Judge.Rejudge = 0
	s := startServer(t)
	q := connect(t, s, "coordinator")
	doomed := liveWorkerProc(t, s.ClientURL(), 2)
	done := make(chan jobResult, 1)
	go func() {
		out, err := coordinator.RunDistributed(context.Background(), job, q, coordinator.DistOptions{Shards: 3})
		done <- jobResult{out, err}
	}()
	waitFor(t, time.Minute, "the doomed worker to grade 100 pairs", func() bool { return srv.requests.Load() >= 100 })
	_ = doomed.Process.Kill()
	if err := doomed.Wait(); !killedBySIGKILL(err) {
		t.Fatalf("the doomed worker did not die by SIGKILL: %v", err)
	}
	liveWorkerProc(t, s.ClientURL(), 2)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	jo := r.out.Judge
	if int64(len(jo.Judgments)) != jo.Holes || len(jo.Failed) != 0 {
		t.Fatalf("%d judgments for %d holes, %d failed", len(jo.Judgments), jo.Holes, len(jo.Failed))
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	twice := 0
	for pair, n := range srv.perPair {
		if n > 1 && !strings.HasSuffix(pair, "|probe") {
			twice++
		}
	}
	// In flight at the kill: at most 2 tasks × 4 requests.
	if twice > 8 {
		t.Fatalf("%d pairs billed twice", twice)
	}
}

// TestJudgeStopsAtTokenBudget: the job stops once the tokens billed reach
// --max-tokens, keeping the judgments made.
func TestJudgeStopsAtTokenBudget(t *testing.T) {
	gold, run := genData(t, 300, schema.FormatJSONL, false)
	srv := &chatServer{perPair: map[string]int{}, delay: 5 * time.Millisecond}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	job := judgeFixture(t, gold, run, ts.URL, nil)
	job.Judge.Rejudge, job.Judge.MaxTokens, job.Judge.PairsPerTask = 0, 110*40, 8
	s := startServer(t)
	startWorkers(t, s, 1, nil)
	out, err := coordinator.RunDistributed(context.Background(), job, connect(t, s, "coordinator"), coordinator.DistOptions{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	jo := out.Judge
	n := int64(len(jo.Judgments))
	if !jo.Stopped || n < 40 || n >= jo.Holes || jo.PromptTokens+jo.CompletionTokens < 110*40 {
		t.Fatalf("stopped %v with %d of %d pairs and %d tokens", jo.Stopped, n, jo.Holes, jo.PromptTokens+jo.CompletionTokens)
	}
}
