package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/examples/retriever/internal/engine"
	"github.com/evalgate/evalgate/examples/retriever/internal/testcorpus"
)

// server is the service over the test corpus, started once for the
// package's tests.
var server *httptest.Server

const fillers = 1000

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "api-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	var e *engine.Engine
	path, err := testcorpus.Write(dir, fillers)
	if err == nil {
		e, err = engine.Build(context.Background(), path, "", zerolog.Nop())
	}
	if err == nil {
		server = httptest.NewServer(NewHandler(e, zerolog.Nop()))
		code = m.Run()
		server.Close()
		e.Close()
	} else {
		fmt.Fprintln(os.Stderr, err)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

type answer struct {
	Hits []struct {
		ID    string  `json:"id"`
		Score float64 `json:"score"`
		Title string  `json:"title"`
	} `json:"hits"`
	Total  int      `json:"total"`
	Mode   string   `json:"mode"`
	TookMS *float64 `json:"took_ms"`
	Error  string   `json:"error"`
}

// call sends a request and decodes the JSON answer, checking that every
// answer is JSON. It reports failures with t.Error, so goroutines may call
// it; the status is 0 after one.
func call(t *testing.T, method, path, body string) (int, answer, http.Header) {
	t.Helper()
	var a answer
	req, err := http.NewRequest(method, server.URL+path, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return 0, a, nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, a, nil
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Error(err)
		return 0, a, nil
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Errorf("%s %s: answer is not JSON: %v: %s", method, path, err, raw)
		return 0, a, nil
	}
	return resp.StatusCode, a, resp.Header
}

func hitIDs(a answer) []string {
	var out []string
	for _, h := range a.Hits {
		out = append(out, h.ID)
	}
	return out
}

// GET and POST give the same ranking; the title query of the candidate
// mode ranks its document first; defaults are k 10 and baseline.
func TestSearch(t *testing.T) {
	code, get, _ := call(t, "GET", "/search?q="+url.QueryEscape("quokka habitat survey")+"&k=5&mode=candidate", "")
	if code != 200 || get.Mode != "candidate" || get.TookMS == nil || *get.TookMS < 0 {
		t.Fatalf("GET: %d %+v", code, get)
	}
	if len(get.Hits) == 0 || get.Hits[0].ID != "quokka-survey" || get.Hits[0].Title != "Quokka habitat survey" {
		t.Fatalf("GET candidate: %+v, want quokka-survey first", get.Hits)
	}
	code, post, _ := call(t, "POST", "/search", `{"query": "quokka habitat survey", "k": 5, "mode": "candidate"}`)
	if code != 200 || !reflect.DeepEqual(post.Hits, get.Hits) || post.Total != get.Total {
		t.Fatalf("POST: %d %+v, want the GET answer %+v", code, post, get)
	}
	code, base, _ := call(t, "GET", "/search?q=quokka+habitat+survey", "")
	if code != 200 || base.Mode != "baseline" || !reflect.DeepEqual(hitIDs(base), []string{"ferry-notes"}) {
		t.Fatalf("GET baseline: %d %+v, want only ferry-notes", code, base)
	}
	_, many, _ := call(t, "POST", "/search", `{"query": "hehe juju wewe hujo"}`)
	if len(many.Hits) != DefaultK || many.Total <= DefaultK {
		t.Fatalf("default k: %d hits of %d, want %d", len(many.Hits), many.Total, DefaultK)
	}
	for i := 1; i < len(many.Hits); i++ {
		if many.Hits[i].Score > many.Hits[i-1].Score {
			t.Fatalf("hits not in score order: %+v", many.Hits)
		}
	}
	_, stemmed, _ := call(t, "GET", "/search?q=connected&mode=candidate", "")
	_, plain, _ := call(t, "GET", "/search?q=connected&mode=baseline", "")
	if !reflect.DeepEqual(hitIDs(stemmed), []string{"router-faq"}) || len(plain.Hits) != 0 {
		t.Fatalf("connected: candidate %v, baseline %v: want router-faq by stemming only", hitIDs(stemmed), hitIDs(plain))
	}
	code, none, _ := call(t, "GET", "/search?q=the+of", "")
	if code != 200 || none.Hits == nil || len(none.Hits) != 0 {
		t.Fatalf("a stop-word query: %d %+v, want 200 and an empty list", code, none)
	}
}

func TestErrors(t *testing.T) {
	long := strings.Repeat("a ", MaxQueryLength)
	for _, c := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"GET", "/search", "", 400, "missing query"},
		{"GET", "/search?q=+", "", 400, "missing query"},
		{"GET", "/search?q=a&k=0", "", 400, "k 0: want 1..1000"},
		{"GET", "/search?q=a&k=1001", "", 400, "k 1001"},
		{"GET", "/search?q=a&k=ten", "", 400, `k "ten": want an integer`},
		{"GET", "/search?q=a&mode=hybrid", "", 400, `unknown mode "hybrid"`},
		{"GET", "/search?query=a", "", 400, `unknown parameter "query"`},
		{"GET", "/search?q=a&q=b", "", 400, `parameter "q" given 2 times`},
		{"GET", "/search?q=" + url.QueryEscape(long), "", 400, "want at most"},
		{"POST", "/search", `{"query": "a", "size": 3}`, 400, `unknown key "size"`},
		{"POST", "/search", `{"query": 3}`, 400, `key "query": want string, got number`},
		{"POST", "/search", `{"query": "a", "k": "3"}`, 400, `key "k"`},
		{"POST", "/search", `{"query": "a"`, 400, "want one JSON object"},
		{"POST", "/search", `["a"]`, 400, "want one JSON object"},
		{"POST", "/search", `{"query": "a"} {"query": "b"}`, 400, "got more after it"},
		{"POST", "/search", ``, 400, "want one JSON object"},
		{"POST", "/search", `{"k": 3}`, 400, "missing query"},
		{"POST", "/search", `{"query": "` + strings.Repeat("a", MaxBodyBytes) + `"}`, 413, "body over"},
		{"PUT", "/search", "", 405, "method PUT"},
		{"DELETE", "/healthz", "", 405, "method DELETE"},
		{"GET", "/", "", 404, "no endpoint /"},
		{"GET", "/search/x", "", 404, "no endpoint /search/x"},
	} {
		code, a, h := call(t, c.method, c.path, c.body)
		name := c.method + " " + c.path[:min(len(c.path), 40)]
		if code != c.code || !strings.Contains(a.Error, c.want) || len(a.Hits) != 0 {
			t.Errorf("%s %.40s: %d %q, want %d and an error with %q", name, c.body, code, a.Error, c.code, c.want)
		}
		if code == 405 && h.Get("Allow") == "" {
			t.Errorf("%s: 405 without Allow", name)
		}
	}
}

func TestHealthz(t *testing.T) {
	resp, err := http.Get(server.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Status string `json:"status"`
		Docs   int    `json:"docs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || resp.StatusCode != 200 || h.Status != "ok" || h.Docs != fillers+len(testcorpus.Known) {
		t.Fatalf("%d %+v %v", resp.StatusCode, h, err)
	}
}

// Concurrent searches in both modes give the answers a lone search gives.
func TestConcurrentSearches(t *testing.T) {
	queries := []string{"quokka habitat survey", "connected", "hehe juju", "xylograph marquetry", "wewe huhe jeje"}
	want := map[string][]string{}
	for _, q := range queries {
		for _, m := range engine.Modes {
			_, a, _ := call(t, "GET", "/search?k=20&mode="+string(m)+"&q="+url.QueryEscape(q), "")
			want[string(m)+q] = hitIDs(a)
		}
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			q, m := queries[i%len(queries)], engine.Modes[i%2]
			code, a, _ := call(t, "POST", "/search", fmt.Sprintf(`{"query": %q, "k": 20, "mode": %q}`, q, m))
			if code != 200 || !reflect.DeepEqual(hitIDs(a), want[string(m)+q]) {
				t.Errorf("%s %q: %d %v, want %v", m, q, code, hitIDs(a), want[string(m)+q])
			}
		})
	}
	wg.Wait()
}
