package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gradingServer is an OpenAI-compatible chat server grading every passage
// 2, serving one model.
func gradingServer(t *testing.T) *httptest.Server {
	t.Helper()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Model string }
		json.NewDecoder(r.Body).Decode(&req)
		if req.Model != "judge-1" {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error": {"message": "The model %s does not exist", "type": "invalid_request_error", "code": "model_not_found"}}`, req.Model)
			return
		}
		fmt.Fprint(w, `{"id": "c", "object": "chat.completion", "model": "judge-1", "choices": [{"index": 0, "finish_reason": "stop",
			"message": {"role": "assistant", "content": "{\"grade\": 2, \"reason\": \"partly\"}"}}],
			"usage": {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}}`)
	}))
}

// TestJudgeCommand: judge grades the holes of a run's top k into a
// judgments file that score --judgments fills in; a wrong model is bad
// input naming the key, before any pair.
func TestJudgeCommand(t *testing.T) {
	ts := gradingServer(t)
	defer ts.Close()
	dir := t.TempDir()
	gold := write(t, dir, "gold.jsonl", liveGold)
	run := write(t, dir, "run.trec", "q1 Q0 d9 1 9 t\nq1 Q0 d1 2 8 t\nq1 Q0 d5 3 7 t\nq2 Q0 d4 1 5 t\nq2 Q0 d3 2 4 t\nq3 Q0 d6 1 3 t\n")
	corpus := write(t, dir, "corpus.jsonl", `{"id": "d9", "text": "nine"}
{"id": "d1", "text": "one"}
{"id": "d5", "title": "five", "text": "five"}
{"id": "d4", "text": "four"}
{"id": "d3", "text": "three"}
`)
	llmFile := write(t, dir, "llm.yaml", "base_url: "+ts.URL+"/v1\nmodel: judge-1\n")
	out := filepath.Join(dir, "judgments.jsonl")
	code, stdout, errs := evalgate(t, "judge", "--gold", gold, "--run", run, "--corpus", corpus, "--llm", llmFile, "--depth", "2", "--out", out,
		"--progress", "off")
	if code != 0 {
		t.Fatalf("judge: exit %d\n%s\n%s", code, stdout, errs)
	}
	// Top 2 holes: q1 d9 (d1 is judged), q2 d4 (d3 is judged), q3 d6 (not in the corpus).
	data, _ := os.ReadFile(out)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"doc_id":"d9"`) || !strings.Contains(lines[1], `"doc_id":"d4"`) ||
		!strings.Contains(stdout, "not judged: 1 pair whose document the corpus lacks") {
		t.Fatalf("judgments:\n%s\nreport:\n%s", data, stdout)
	}
	code, stdout, errs = evalgate(t, "score", "--gold", gold, "--run", run, "--judgments", out, "-m", "P@1")
	if code != 0 || !strings.Contains(stdout, "2 LLM judgments filled in (judge-1") {
		t.Fatalf("score --judgments: exit %d\n%s\n%s", code, stdout, errs)
	}
	bad := write(t, dir, "bad.yaml", "base_url: "+ts.URL+"/v1\nmodel: no-such-model\n")
	code, _, errs = evalgate(t, "judge", "--gold", gold, "--run", run, "--corpus", corpus, "--llm", bad, "--out", filepath.Join(dir, "x.jsonl"),
		"--progress", "off")
	if code != 2 || !strings.Contains(errs, "bad.yaml:2") || !strings.Contains(errs, "model") {
		t.Fatalf("a wrong model: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.jsonl")); err == nil {
		t.Fatal("a failed judge wrote its output")
	}
}
