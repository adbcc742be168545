package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// liveGold is a gold set with query texts, for live retrieval.
const liveGold = `{"query_id": "q1", "query": "what is a hybrid retriever", "relevant_ids": ["d1", "d2"], "tags": {"category": "search"}}
{"query_id": "q2", "query": "vector databases", "relevant_ids": ["d3"], "tags": {"category": "infra"}}
{"query_id": "q3", "query": "bm25 saturation", "relevant_ids": ["d7"], "tags": {"category": "search"}}
`

// searchServer answers a fixed ranking per query text, in an
// Elasticsearch-like shape, and records every request's headers.
type searchServer struct {
	mu      sync.Mutex
	headers []http.Header
}

func (s *searchServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.headers = append(s.headers, r.Header.Clone())
	s.mu.Unlock()
	rankings := map[string][]string{
		"what is a hybrid retriever": {"d9", "d1", "d2"},
		"vector databases":           {"d3", "d4"},
		"bm25 saturation":            {"d8", "d8", "d5"},
	}
	q := r.URL.Query().Get("q")
	if r.Header.Get("Authorization") != "Bearer s3cr3t-t0ken" {
		// Servers echo what they got: the secret must not leak through.
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error": "bad token %s"}`, r.Header.Get("Authorization"))
		return
	}
	var hits []map[string]any
	for i, d := range rankings[q] {
		hits = append(hits, map[string]any{"_id": d, "_score": 10 - i})
	}
	json.NewEncoder(w).Encode(map[string]any{"hits": map[string]any{"hits": hits}})
}

func liveFiles(t *testing.T, url string) (dir, gold, retr string) {
	t.Helper()
	dir = t.TempDir()
	gold = write(t, dir, "gold.jsonl", liveGold)
	retr = write(t, dir, "search.yaml", "url: "+url+"/_search?q={{.Query | urlquery}}&size={{.K}}\n"+
		"headers:\n  Authorization: \"Bearer ${SEARCH_TOKEN}\"\nresults: hits.hits\nid: _id\nscore: _score\nk: 10\nretries: 1\n")
	return dir, gold, retr
}

// TestLiveScoreSavesTheRunAndKeepsSecrets: score --retriever scores what
// the retriever answers; the saved run replays to the same values with
// --rank-by rank; the token from the environment appears in no output.
func TestLiveScoreSavesTheRunAndKeepsSecrets(t *testing.T) {
	srv := &searchServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	dir, gold, retr := liveFiles(t, ts.URL)
	t.Setenv("SEARCH_TOKEN", "s3cr3t-t0ken")
	saved := filepath.Join(dir, "saved.jsonl")
	report := filepath.Join(dir, "report")
	crit := write(t, dir, "c.yaml", "gates:\n  - name: latency_p95_ms\n    threshold: 60000\n  - name: failed_queries\n    threshold: 0\n  - name: recall_at_5\n    metric: R@5\n    threshold: 0.5\n")
	code, out, errs := evalgate(t, "score", "--gold", gold, "--retriever", retr, "--save-run", saved, "--criteria", crit,
		"--report", report, "--format", "json", "-m", "R@5,RR")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var s struct {
		Measures []struct {
			Name  string
			Value float64
		}
		Retrieval struct {
			Answered, Requests int64
			Latency            struct{ P50 float64 }
		}
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatal(err)
	}
	// q1: d1, d2 at ranks 2-3 (R@5 1, RR 1/2); q2: d3 first; q3: d7 absent.
	if s.Measures[0].Value != 2.0/3 || s.Measures[1].Value != 0.5 || s.Retrieval.Answered != 3 || s.Retrieval.Requests != 3 {
		t.Fatalf("summary %+v", s)
	}
	code, replay, errs := evalgate(t, "score", "--gold", gold, "--run", saved, "--rank-by", "rank", "-m", "R@5,RR", "--format", "json")
	if code != 0 {
		t.Fatalf("replay: exit %d: %s", code, errs)
	}
	if !strings.Contains(replay, `"value": 0.6666666666666666`) || !strings.Contains(replay, `"value": 0.5`) {
		t.Fatalf("the saved run replays differently:\n%s", replay)
	}
	// The secret is nowhere: not in the summary, the reports, the saved run.
	var files []string
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && !strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) < 5 {
		t.Fatalf("outputs %v", files)
	}
	for _, f := range append(files, "stdout", "stderr") {
		data := out + errs
		if f != "stdout" && f != "stderr" {
			b, _ := os.ReadFile(f)
			data = string(b)
		}
		if strings.Contains(data, "s3cr3t") {
			t.Errorf("%s holds the secret", f)
		}
	}
	// A wrong token: the server echoes it; the error shows it redacted.
	t.Setenv("SEARCH_TOKEN", "wr0ng-t0ken")
	code, _, errs = evalgate(t, "score", "--gold", gold, "--retriever", retr)
	if code != 2 || strings.Contains(errs, "wr0ng") || !strings.Contains(errs, "401") || !strings.Contains(errs, "[redacted]") {
		t.Fatalf("a rejected token: exit %d, stderr %s", code, errs)
	}
}

// TestLiveBadConfigurationStopsBeforeTheJob: every problem of the
// retriever file is exit 2 naming the file, line and key, before a query
// is scored.
func TestLiveBadConfigurationStopsBeforeTheJob(t *testing.T) {
	srv := &searchServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	dir, gold, retr := liveFiles(t, ts.URL)
	t.Setenv("SEARCH_TOKEN", "s3cr3t-t0ken")
	base := "url: " + ts.URL + "/_search?q={{.Query | urlquery}}\nheaders:\n  Authorization: \"Bearer ${SEARCH_TOKEN}\"\n"
	for _, c := range []struct {
		name, file string
		want       []string
	}{
		{"unknown key", base + "results: hits.hits\nid: _id\nsize: 10\n", []string{"bad.yaml:6", "size", "unknown key"}},
		{"template does not parse", "url: " + ts.URL + "/?q={{.Query | urlquery\nresults: hits.hits\nid: _id\n", []string{"bad.yaml:1", "url"}},
		{"results not a list", base + "results: hits\nid: _id\n", []string{"bad.yaml:4", "results"}},
		{"unset variable", strings.Replace(base, "SEARCH_TOKEN", "NO_SUCH_TOKEN_VAR", 1) + "results: hits.hits\nid: _id\n",
			[]string{"bad.yaml:3", "NO_SUCH_TOKEN_VAR"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad := write(t, dir, "bad.yaml", c.file)
			out := filepath.Join(dir, "out.json")
			code, _, errs := evalgate(t, "score", "--gold", gold, "--retriever", bad, "-o", out)
			if code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, errs)
			}
			for _, w := range c.want {
				if !strings.Contains(errs, w) {
					t.Errorf("error %q lacks %q", errs, w)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("an output was written")
			}
		})
	}
	// The flags of run files do not go with a retriever.
	for _, args := range [][]string{
		{"--run", retr}, {"--run-format", "trec"}, {"--strict"},
	} {
		code, _, errs := evalgate(t, append([]string{"score", "--gold", gold, "--retriever", retr}, args...)...)
		if code != 2 || !strings.Contains(errs, "Try: evalgate --help") {
			t.Errorf("%v: exit %d: %s", args, code, errs)
		}
	}
	if code, _, errs := evalgate(t, "score", "--gold", gold, "--run", retr, "--save-run", "x.trec"); code != 2 || !strings.Contains(errs, "needs --retriever") {
		t.Errorf("--save-run without --retriever: exit %d: %s", code, errs)
	}
}
