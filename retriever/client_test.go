package retriever

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/evalgate/evalgate/schema"
)

// server is a test HTTP server that counts requests, in flight and in
// total, and records when each arrived.
type server struct {
	*httptest.Server
	mu          sync.Mutex
	n           int
	inFlight    int
	maxInFlight int
	times       []time.Time
	bodies      []string
}

// newServer starts a server whose handler h sees the request number n
// (from 1) and the request body.
func newServer(t *testing.T, h func(w http.ResponseWriter, r *http.Request, n int, body []byte)) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.n++
		n := s.n
		s.inFlight++
		s.maxInFlight = max(s.maxInFlight, s.inFlight)
		s.times = append(s.times, time.Now())
		s.bodies = append(s.bodies, string(body))
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.inFlight--
			s.mu.Unlock()
		}()
		h(w, r, n, body)
	}))
	t.Cleanup(s.Close)
	return s
}

// arrivals returns when each request arrived, in order.
func (s *server) arrivals() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.times...)
}

// peak returns the most requests that were in flight at once.
func (s *server) peak() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight
}

func (s *server) requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// esAnswer writes an Elasticsearch-shaped answer with the given ids and
// scores.
func esAnswer(w http.ResponseWriter, ids []string, scores []float64) {
	type hit struct {
		Index string  `json:"_index"`
		ID    string  `json:"_id"`
		Score float64 `json:"_score"`
	}
	hits := make([]hit, len(ids))
	for i := range ids {
		hits[i] = hit{"chunks", ids[i], scores[i]}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"took": 3, "timed_out": false,
		"hits": map[string]any{"total": map[string]any{"value": len(ids), "relation": "eq"}, "hits": hits}})
}

// testConfig parses a retriever file for srv with the given extra keys.
func testConfig(t *testing.T, srvURL, extra string, env map[string]string) *Config {
	t.Helper()
	file := fmt.Sprintf(`url: %s/chunks/_search
body: '{"query": {"match": {"text": {{json .Query}}}}, "size": {{.K}}}'
results: hits.hits
id: _id
score: _score
k: 5
timeout: 2s
%s`, srvURL, extra)
	c, err := Parse("ret.yaml", []byte(file), envOf(env))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fastBackoff keeps retries quick in tests.
var fastBackoff = ClientOptions{BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond}

func newTestClient(t *testing.T, c *Config, opts ClientOptions) *Client {
	t.Helper()
	cl, err := NewClient(c, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func TestRetrieveListOrder(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		var req struct {
			Query struct{ Match struct{ Text string } }
			Size  int
		}
		if r.Method != "POST" || r.URL.Path != "/chunks/_search" || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &req) != nil {
			http.Error(w, "bad request "+r.Method+" "+r.URL.Path+" "+string(body), 400)
			return
		}
		if req.Query.Match.Text != `what "is" evalgate?` || req.Size != 3 {
			http.Error(w, "wrong query "+string(body), 400)
			return
		}
		// Scores out of order: the list order is the ranking.
		esAnswer(w, []string{"d3", "d1", "d2", "d9"}, []float64{0.5, 2.25, 1, 0.1})
	})
	cl := newTestClient(t, testConfig(t, srv.URL, "", nil), fastBackoff)
	ans, err := cl.Retrieve(context.Background(), Query{ID: "q1", Text: `what "is" evalgate?`, K: 3})
	if err != nil {
		t.Fatal(err)
	}
	want := []Hit{{"d3", 0.5, true}, {"d1", 2.25, true}, {"d2", 1, true}}
	if fmt.Sprint(ans.Hits) != fmt.Sprint(want) {
		t.Errorf("hits %v, want %v", ans.Hits, want)
	}
	if ans.Short || ans.Attempts != 1 || ans.Status != 200 || ans.QueryID != "q1" || ans.Latency <= 0 {
		t.Errorf("answer %+v", ans)
	}
}

// TestIDsKeptExactly: number ids keep their JSON text; UUIDs are strings.
func TestIDsKeptExactly(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		io.WriteString(w, `{"result": [{"id": 42, "score": 0.9}, {"id": 18446744073709551615, "score": 0.8},
			{"id": "5c56c793-69f3-4fbf-87e6-c4bf54c28c26", "score": 0.7}, {"id": 1.50E3, "score": 1e-7}]}`)
	})
	c := testConfig(t, srv.URL, "", nil)
	c.results, _ = ParsePath("result")
	c.id, _ = ParsePath("id")
	c.score, _ = ParsePath("score")
	ans, err := newTestClient(t, c, fastBackoff).Retrieve(context.Background(), Query{ID: "q1", Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Hit{{"42", 0.9, true}, {"18446744073709551615", 0.8, true}, {"5c56c793-69f3-4fbf-87e6-c4bf54c28c26", 0.7, true}, {"1.50E3", 1e-7, true}}
	if fmt.Sprint(ans.Hits) != fmt.Sprint(want) || !ans.Short {
		t.Errorf("hits %v short %v, want %v short", ans.Hits, ans.Short, want)
	}
}

func TestRetrieveShortAndEmpty(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		if n == 1 {
			esAnswer(w, []string{"a", "b"}, []float64{2, 1})
			return
		}
		esAnswer(w, nil, nil)
	})
	cl := newTestClient(t, testConfig(t, srv.URL, "", nil), fastBackoff)
	ans, err := cl.Retrieve(context.Background(), Query{ID: "q1", Text: "x"})
	if err != nil || len(ans.Hits) != 2 || !ans.Short {
		t.Fatalf("fewer than k: %+v, %v", ans, err)
	}
	ans, err = cl.Retrieve(context.Background(), Query{ID: "q2", Text: "x"})
	if err != nil || len(ans.Hits) != 0 || !ans.Short || ans.Hits == nil {
		t.Fatalf("empty list: %+v, %v", ans, err)
	}
	if srv.requests() != 2 {
		t.Errorf("%d requests, want 2", srv.requests())
	}
}

func TestRetry429RetryAfterSeconds(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "slow down", http.StatusTooManyRequests)
			return
		}
		esAnswer(w, []string{"a"}, []float64{1})
	})
	var attempts []Attempt
	var mu sync.Mutex
	opts := fastBackoff
	opts.Observe = func(a Attempt) { mu.Lock(); attempts = append(attempts, a); mu.Unlock() }
	cl := newTestClient(t, testConfig(t, srv.URL, "retries: 2\n", nil), opts)
	ans, err := cl.Retrieve(context.Background(), Query{ID: "q1", Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if ans.Attempts != 2 || srv.requests() != 2 {
		t.Errorf("attempts %d, requests %d, want 2", ans.Attempts, srv.requests())
	}
	if times := srv.arrivals(); times[1].Sub(times[0]) < time.Second {
		gap := times[1].Sub(times[0])
		t.Errorf("retried after %s, before the Retry-After of 1s", gap)
	}
	if len(attempts) != 2 || !attempts[0].RateLimited || !attempts[0].Retry || attempts[0].Class() != "4xx" ||
		attempts[1].Retry || attempts[1].Err != nil || attempts[1].Class() != "2xx" || attempts[1].Elapsed != ans.Latency {
		t.Errorf("observed %+v", attempts)
	}
}

func TestRetry503RetryAfterDate(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		if n == 1 {
			// An HTTP date has whole seconds: the wait is in (1s, 2s].
			w.Header().Set("Retry-After", time.Now().Add(2*time.Second).UTC().Format(http.TimeFormat))
			http.Error(w, "maintenance", http.StatusServiceUnavailable)
			return
		}
		esAnswer(w, []string{"a"}, []float64{1})
	})
	cl := newTestClient(t, testConfig(t, srv.URL, "retries: 1\n", nil), fastBackoff)
	if _, err := cl.Retrieve(context.Background(), Query{ID: "q1", Text: "x"}); err != nil {
		t.Fatal(err)
	}
	times := srv.arrivals()
	if len(times) != 2 {
		t.Fatalf("%d requests, want 2", len(times))
	}
	if gap := times[1].Sub(times[0]); gap < 900*time.Millisecond {
		t.Errorf("retried after %s, before the Retry-After date", gap)
	}
}

func TestRetryAfterBeyondCap(t *testing.T) {
	for _, value := range []string{"3600", "99999999999999999999", time.Now().Add(2 * time.Hour).UTC().Format(http.TimeFormat)} {
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
			w.Header().Set("Retry-After", value)
			http.Error(w, "quota exhausted", http.StatusTooManyRequests)
		})
		cl := newTestClient(t, testConfig(t, srv.URL, "retries: 5\nmax_retry_after: 30s\n", nil), fastBackoff)
		start := time.Now()
		_, err := cl.Retrieve(context.Background(), Query{ID: "q7", Text: "x"})
		var qe *QueryError
		if !errors.As(err, &qe) || !errors.Is(err, ErrRetryAfterTooLong) || qe.Attempts != 1 || qe.Status != 429 {
			t.Fatalf("Retry-After %s: error %v", value, err)
		}
		if !strings.Contains(err.Error(), "more than max_retry_after 30s") || !strings.Contains(err.Error(), `"quota exhausted\n"`) {
			t.Errorf("error text %q", err)
		}
		if srv.requests() != 1 || time.Since(start) > 20*time.Second {
			t.Errorf("%d requests; it waited", srv.requests())
		}
	}
}

func TestRetry5xxThenSuccess(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		if n <= 2 {
			http.Error(w, "boom", 500+n)
			return
		}
		esAnswer(w, []string{"a"}, []float64{1})
	})
	cl := newTestClient(t, testConfig(t, srv.URL, "retries: 2\n", nil), fastBackoff)
	ans, err := cl.Retrieve(context.Background(), Query{ID: "q1", Text: "x"})
	if err != nil || ans.Attempts != 3 || srv.requests() != 3 {
		t.Fatalf("answer %+v, error %v, %d requests", ans, err, srv.requests())
	}
}

func TestRetriesExhausted(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		w.WriteHeader(500)
		io.WriteString(w, strings.Repeat("é", 150)) // 300 bytes: cut at a rune boundary
	})
	cl := newTestClient(t, testConfig(t, srv.URL, "retries: 3\n", nil), fastBackoff)
	ans, err := cl.Retrieve(context.Background(), Query{ID: "q-500", Text: "x"})
	var qe *QueryError
	if !errors.As(err, &qe) {
		t.Fatalf("error %v (%T)", err, err)
	}
	if qe.QueryID != "q-500" || qe.Attempts != 4 || qe.Status != 500 || qe.Step != StepSearch || qe.Err != nil || ans.Attempts != 4 || srv.requests() != 4 {
		t.Errorf("QueryError %+v, answer attempts %d, %d requests", qe, ans.Attempts, srv.requests())
	}
	if qe.Body != strings.Repeat("é", 100) {
		t.Errorf("body excerpt %q (%d bytes)", qe.Body, len(qe.Body))
	}
	if want := `retrieve query "q-500": 4 attempts, last answer HTTP 500 Internal Server Error: body "ééé`; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want prefix %q", err, want)
	}
}

func TestClientErrorsNotRetried(t *testing.T) {
	for status, wantRequests := range map[int]int{400: 1, 401: 1, 404: 1, 422: 1, 408: 3, 502: 3} {
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
			http.Error(w, `{"error": "nope"}`, status)
		})
		cl := newTestClient(t, testConfig(t, srv.URL, "retries: 2\n", nil), fastBackoff)
		_, err := cl.Retrieve(context.Background(), Query{ID: "q1", Text: "x"})
		var qe *QueryError
		if !errors.As(err, &qe) || qe.Status != status || qe.Attempts != wantRequests || srv.requests() != wantRequests {
			t.Errorf("HTTP %d: error %v, %d requests, want %d", status, err, srv.requests(), wantRequests)
		}
	}
}

func TestTimeoutRetried(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		select {
		case <-time.After(5 * time.Second):
		case <-r.Context().Done(): // the client gave up
		}
	})
	c := testConfig(t, srv.URL, "retries: 1\n", nil)
	c.Timeout = 100 * time.Millisecond
	_, err := newTestClient(t, c, fastBackoff).Retrieve(context.Background(), Query{ID: "q1", Text: "x"})
	var qe *QueryError
	if !errors.As(err, &qe) || !errors.Is(err, ErrTimeout) || qe.Attempts != 2 || qe.Status != 0 {
		t.Fatalf("error %v", err)
	}
	if !strings.Contains(err.Error(), "2 attempts, last error: no answer within the timeout of 100ms") {
		t.Errorf("error text %q", err)
	}
	if srv.requests() != 2 {
		t.Errorf("%d requests, want 2", srv.requests())
	}
}

func TestSlowAnswerWithinTimeout(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		time.Sleep(150 * time.Millisecond)
		esAnswer(w, []string{"a"}, []float64{1})
	})
	ans, err := newTestClient(t, testConfig(t, srv.URL, "", nil), fastBackoff).Retrieve(context.Background(), Query{ID: "q1", Text: "x"})
	if err != nil || ans.Attempts != 1 || srv.requests() != 1 {
		t.Fatalf("answer %+v, error %v", ans, err)
	}
	if ans.Latency < 150*time.Millisecond {
		t.Errorf("latency %s is less than the server's 150ms", ans.Latency)
	}
}

func TestMalformedJSONNotRetried(t *testing.T) {
	for _, body := range []string{`{"hits": {"hits": [`, `<html>Sign in</html>`, `{"hits": {}} trailing`, ``} {
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ []byte) {
			io.WriteString(w, body)
		})
		cl := newTestClient(t, testConfig(t, srv.URL, "retries: 3\n", nil), fastBackoff)
		_, err := cl.Retrieve(context.Background(), Query{ID: "q1", Text: "x"})
		var qe *QueryError
		if !errors.As(err, &qe) || !errors.Is(err, ErrMalformedAnswer) || qe.Attempts != 1 || qe.Status != 200 || qe.Body != body {
			t.Errorf("body %q: error %v", body, err)
		}
		if srv.requests() != 1 {
			t.Errorf("body %q: %d requests, want 1", body, srv.requests())
		}
	}
}

// TestTruncatedBodyRetried: an answer cut short of its Content-Length is a
// transport error, retried.
func TestTruncatedBodyRetried(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, body []byte) {
		if n == 1 {
			w.Header().Set("Content-Length", "500")
			io.WriteString(w, `{"hits": {"hits": [`)
			return // the server closes the connection short of 500 bytes
		}
		esAnswer(w, []string{"a"}, []float64{1})
	})
	ans, err := newTestClient(t, testConfig(t, srv.URL, "retries: 1\n", nil), fastBackoff).Retrieve(context.Background(), Query{ID: "q1", Text: "x"})
	if err != nil || ans.Attempts != 2 || srv.requests() != 2 {
		t.Fatalf("answer %+v, error %v, %d requests", ans, err, srv.requests())
	}
}

func TestConnectionRefusedRetried(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c := testConfig(t, url, "retries: 2\n", nil)
	_, err := newTestClient(t, c, fastBackoff).Retrieve(context.Background(), Query{ID: "q1", Text: "x"})
	var qe *QueryError
	if !errors.As(err, &qe) || qe.Attempts != 3 || qe.Status != 0 || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("error %v", err)
	}
}

func TestAnswerShapeErrors(t *testing.T) {
	tests := []struct {
		answer string
		field  string
		line   int64
		want   string
	}{
		{`{"hits": {"hits": [{"_id": "a", "_score": 1}, {"_score": 0.5}]}}`, "id", 4, `hit 1 of hits.hits: no id at _id: the answer: no key "_id" in an object with keys _score`},
		{`{"hits": {"hits": [{"_id": null, "_score": 1}]}}`, "id", 4, "id at _id is null: want a string or a number"},
		{`{"hits": {"hits": [{"_id": "", "_score": 1}]}}`, "id", 4, "id at _id is empty"},
		{`{"hits": {"total": 0}}`, "results", 3, `no list of hits at hits.hits: hits: no key "hits" in an object with keys total`},
		{`{"hits": {"hits": {"a": 1}}}`, "results", 3, "hits.hits is not a list: found an object with keys a"},
		{`{"hits": {"hits": null}}`, "results", 3, "hits.hits is not a list: found null"},
		{`{"error": {"type": "index_not_found_exception"}, "status": 404}`, "results", 3, "no key \"hits\" in an object with keys error, status"},
		{`{"hits": {"hits": [{"_id": "a", "_score": "1.5"}]}}`, "score", 5, `score at _score is the string "1.5": want a number`},
		{`{"hits": {"hits": [{"_id": "a", "_score": 1e999}]}}`, "score", 5, "not a finite float64"},
	}
	for _, tc := range tests {
		srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ []byte) {
			io.WriteString(w, tc.answer)
		})
		cl := newTestClient(t, testConfig(t, srv.URL, "retries: 3\n", nil), fastBackoff)
		_, err := cl.Retrieve(context.Background(), Query{ID: "q1", Text: "x"})
		var ie *schema.InputError
		if !errors.As(err, &ie) || !errors.Is(err, ErrAnswerShape) || !schema.IsInvalidInput(err) {
			t.Errorf("%s: error %v (%T)", tc.answer, err, err)
			continue
		}
		if ie.File != "ret.yaml" || ie.Field != tc.field || ie.Line != tc.line || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `answer to query "q1"`) {
			t.Errorf("%s: error %v, want field %s line %d saying %q", tc.answer, err, tc.field, tc.line, tc.want)
		}
		if srv.requests() != 1 {
			t.Errorf("%s: %d requests, want 1 (not retried)", tc.answer, srv.requests())
		}
	}
}

// TestSecretsRedacted: a server that echoes the Authorization header, in
// an error answer, in a shape error and in a transport error, never gets
// the secret into an error.
func TestSecretsRedacted(t *testing.T) {
	const token = `tok-"9f8e7d6c5b4a"/+x`
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ []byte) {
		echo, _ := json.Marshal(map[string]string{"you_sent": r.Header.Get("Authorization"), "query": r.URL.RawQuery})
		switch r.URL.Query().Get("mode") {
		case "401":
			w.WriteHeader(401)
			w.Write(echo)
		case "500":
			w.WriteHeader(500)
			io.WriteString(w, "raw header: "+r.Header.Get("Authorization"))
		default:
			w.Write(echo) // 200 without hits: a shape error
		}
	})
	var observed []Attempt
	var mu sync.Mutex
	opts := fastBackoff
	opts.Observe = func(a Attempt) { mu.Lock(); observed = append(observed, a); mu.Unlock() }
	for _, mode := range []string{"401", "500", "shape"} {
		file := fmt.Sprintf("url: %s/s?mode=%s&key=${TOKEN}\nheaders:\n  Authorization: Bearer ${TOKEN}\nresults: hits\nid: id\nretries: 1\n", srv.URL, mode)
		c, err := Parse("r.yaml", []byte(file), envOf(map[string]string{"TOKEN": token}))
		if err != nil {
			t.Fatal(err)
		}
		_, err = newTestClient(t, c, opts).Retrieve(context.Background(), Query{ID: "q1", Text: "x"})
		if err == nil {
			t.Fatalf("%s: no error", mode)
		}
		t.Logf("%s: %v", mode, err)
		if strings.Contains(err.Error(), "9f8e7d6c5b4a") || !strings.Contains(err.Error(), "[redacted]") {
			t.Errorf("%s: error shows the secret or nothing redacted: %v", mode, err)
		}
	}
	// A transport error names the URL, which holds the secret.
	srv.Close()
	file := fmt.Sprintf("url: %s/s?key=${TOKEN}\nresults: hits\nid: id\nretries: 0\n", srv.URL)
	c, _ := Parse("r.yaml", []byte(file), envOf(map[string]string{"TOKEN": token}))
	_, err := newTestClient(t, c, opts).Retrieve(context.Background(), Query{ID: "q1", Text: "x"})
	if err == nil || strings.Contains(err.Error(), "9f8e7d6c5b4a") {
		t.Errorf("transport error %v", err)
	}
	for _, a := range observed {
		if a.Err != nil && strings.Contains(a.Err.Error(), "9f8e7d6c5b4a") {
			t.Errorf("observed attempt error shows the secret: %v", a.Err)
		}
	}
}

func TestRetrieveMissingTag(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ []byte) {
		if r.URL.Query().Get("cat") != "legal,tax" {
			http.Error(w, "cat="+r.URL.Query().Get("cat"), 400)
			return
		}
		esAnswer(w, []string{"a"}, []float64{1})
	})
	file := fmt.Sprintf("url: %s/s?cat={{.Tags.category | urlquery}}\nresults: hits.hits\nid: _id\n", srv.URL)
	c, err := Parse("r.yaml", []byte(file), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	cl := newTestClient(t, c, fastBackoff)
	if _, err := cl.Retrieve(context.Background(), Query{ID: "q1", Text: "x", Tags: []string{"category=legal", "tier=1", "category=tax"}}); err != nil {
		t.Fatal(err)
	}
	_, err = cl.Retrieve(context.Background(), Query{ID: "q2", Text: "x", Tags: []string{"tier=1"}})
	var ie *schema.InputError
	if !errors.As(err, &ie) || !errors.Is(err, ErrTemplate) || ie.Field != "url" || ie.Line != 1 || !strings.Contains(err.Error(), `query "q2"`) {
		t.Fatalf("error %v", err)
	}
	if srv.requests() != 1 {
		t.Errorf("%d requests, want 1", srv.requests())
	}
}

// TestConcurrencyBound: at most concurrency requests reach the server at
// once, however many goroutines call Retrieve.
func TestConcurrencyBound(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ []byte) {
		time.Sleep(20 * time.Millisecond)
		if n%5 == 0 {
			http.Error(w, "again", http.StatusServiceUnavailable) // retries hold no slot while they back off
			return
		}
		esAnswer(w, []string{"a"}, []float64{1})
	})
	c := testConfig(t, srv.URL, "concurrency: 3\nretries: 5\n", nil)
	cl := newTestClient(t, c, fastBackoff)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 40 {
		wg.Go(func() {
			_, err := cl.Retrieve(context.Background(), Query{ID: strconv.Itoa(i), Text: "x"})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if peak := srv.peak(); peak > 3 || peak < 2 {
		t.Errorf("max in flight %d, want 3 (at most)", peak)
	}
}

// TestLocalLimiterAtServer: with rate 50, no one-second window at the
// server holds more than 55 requests.
func TestLocalLimiterAtServer(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ []byte) {
		esAnswer(w, []string{"a"}, []float64{1})
	})
	c := testConfig(t, srv.URL, "concurrency: 8\nrate: 50\n", nil)
	cl := newTestClient(t, c, fastBackoff)
	var wg sync.WaitGroup
	for i := range 100 { // 2 s at 50/s
		wg.Go(func() {
			if _, err := cl.Retrieve(context.Background(), Query{ID: strconv.Itoa(i), Text: "x"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := maxPerWindow(srv.arrivals(), time.Second); got > 55 {
		t.Errorf("%d requests in one second, rate 50", got)
	}
}

// maxPerWindow returns the most timestamps in any window of length d
// (sorted input; each window starts at a timestamp).
func maxPerWindow(ts []time.Time, d time.Duration) int {
	best, j := 0, 0
	for i := range ts {
		for j < len(ts) && ts[j].Sub(ts[i]) < d {
			j++
		}
		best = max(best, j-i)
	}
	return best
}

// TestCancel: Retrieve returns the context's error when the context ends
// during a request, a backoff or a wait for a concurrency slot.
func TestCancel(t *testing.T) {
	release := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ []byte) {
		if r.URL.Query().Get("mode") == "retry" {
			w.Header().Set("Retry-After", "30")
			http.Error(w, "later", http.StatusServiceUnavailable)
			return
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	for _, mode := range []string{"hang", "retry"} {
		file := fmt.Sprintf("url: %s/s?mode=%s\nresults: hits\nid: id\nconcurrency: 1\ntimeout: 1m\nretries: 3\n", srv.URL, mode)
		c, err := Parse("r.yaml", []byte(file), noEnv)
		if err != nil {
			t.Fatal(err)
		}
		cl := newTestClient(t, c, fastBackoff)
		ctx, cancel := context.WithCancel(context.Background())
		errs := make(chan error, 2)
		for i := range 2 { // the second waits for the only slot (or backs off)
			go func() {
				_, err := cl.Retrieve(ctx, Query{ID: strconv.Itoa(i), Text: "x"})
				errs <- err
			}()
		}
		time.Sleep(100 * time.Millisecond)
		cancel()
		for range 2 {
			select {
			case err := <-errs:
				var qe *QueryError
				if !errors.Is(err, context.Canceled) || errors.As(err, &qe) {
					t.Errorf("%s: error %v, want context.Canceled", mode, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: Retrieve did not return after cancel", mode)
			}
		}
	}
}

// TestNoGoroutineLeak: after many queries with retries, timeouts and
// cancellations, the goroutine count comes back.
func TestNoGoroutineLeak(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ []byte) {
		switch n % 4 {
		case 0:
			http.Error(w, "x", 500)
		case 1:
			select {
			case <-time.After(300 * time.Millisecond):
			case <-r.Context().Done():
			}
		default:
			esAnswer(w, []string{"a"}, []float64{1})
		}
	})
	before := runtime.NumGoroutine()
	c := testConfig(t, srv.URL, "retries: 2\nconcurrency: 4\n", nil)
	c.Timeout = 50 * time.Millisecond
	cl, err := NewClient(c, fastBackoff)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Go(func() {
			if i == 20 {
				cancel()
			}
			cl.Retrieve(ctx, Query{ID: strconv.Itoa(i), Text: "x"})
		})
	}
	wg.Wait()
	cancel()
	cl.Close()
	srv.CloseClientConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestProbe(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request, n int, _ []byte) {
		switch r.URL.Path {
		case "/missing/chunks/_search":
			http.Error(w, `{"error":"no such index [missing]"}`, 404)
		case "/html/chunks/_search":
			io.WriteString(w, "<html>login</html>")
		case "/shape/chunks/_search":
			io.WriteString(w, `{"took": 1, "hits": {"total": 0}}`)
		default:
			esAnswer(w, []string{"a", "b"}, []float64{2, 1})
		}
	})
	tests := map[string]struct {
		field string
		line  int64
		want  string
	}{
		"missing": {"url", 1, `probe query "q1": the request does not work: retrieve query "q1": 1 attempt, last answer HTTP 404 Not Found: body "{\"error\":\"no such index [missing]\"}\n"`},
		"html":    {"url", 1, "answer is not JSON"},
		"shape":   {"results", 3, `no key "hits" in an object with keys total`},
	}
	for index, tc := range tests {
		cl := newTestClient(t, testConfig(t, srv.URL+"/"+index, "", nil), fastBackoff)
		_, err := cl.Probe(context.Background(), Query{ID: "q1", Text: "x"})
		var ie *schema.InputError
		if !errors.As(err, &ie) || ie.Field != tc.field || ie.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want field %s line %d saying %s", index, err, tc.field, tc.line, tc.want)
		}
	}
	cl := newTestClient(t, testConfig(t, srv.URL, "", nil), fastBackoff)
	if ans, err := cl.Probe(context.Background(), Query{ID: "q1", Text: "x"}); err != nil || len(ans.Hits) != 2 {
		t.Errorf("good probe: %+v, %v", ans, err)
	}
}

func TestNewClientRefusesNil(t *testing.T) {
	if _, err := NewClient(nil, ClientOptions{}); err == nil {
		t.Error("no error for a nil Config")
	}
	if _, err := NewClient(&Config{}, ClientOptions{}); err == nil {
		t.Error("no error for a Config not from Parse")
	}
}
