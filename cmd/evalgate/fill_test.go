package main

import (
	"strings"
	"testing"
)

const fillJudgments = `{"query_id":"q1","doc_id":"d9","grade":2,"model":"m","prompt_sha256":"p"}
{"query_id":"q2","doc_id":"d3","grade":0,"model":"m","prompt_sha256":"p"}
`

// TestJudgmentsFilledGates: with --judgments every measure is also
// reported with the LLM judgments filled in; a judgments: filled gate
// checks those values, on score and on gate re-gating a saved summary; on
// a summary without them it is not checked, never passed.
func TestJudgmentsFilledGates(t *testing.T) {
	dir := t.TempDir()
	g, r := write(t, dir, "g.qrels", goldQrels), write(t, dir, "r.trec", runTREC)
	j := write(t, dir, "j.jsonl", fillJudgments)
	crit := write(t, dir, "c.yaml", "judgments: filled\ngates:\n  - name: p1\n    metric: P@1\n    threshold: 0.9\n")
	// q1's d9 (rank 1) is unjudged: P@1 is 0.5 with human judgments, 1 filled in.
	code, out, errs := evalgate(t, "score", "--gold", g, "--run", r, "--judgments", j, "--criteria", crit, "-m", "P@1")
	if code != 0 || !strings.Contains(out, "P@1 (LLM-filled)  100.0%") || !strings.Contains(out, "1 LLM judgment filled in") {
		t.Fatalf("score --judgments: exit %d\n%s\n%s", code, out, errs)
	}
	summaryFile := write(t, dir, "unused", "")
	if code, _, errs := evalgate(t, "score", "--gold", g, "--run", r, "-m", "P@1", "--summary-out", summaryFile); code != 0 {
		t.Fatal(errs)
	}
	code, out, _ = evalgate(t, "gate", "--summary", summaryFile, "--criteria", crit)
	if code != 0 || !strings.Contains(out, "not checked") || strings.Contains(out, "✅ The 1 gate passes") {
		t.Fatalf("gate without judgments: exit %d\n%s", code, out)
	}
	code, out, errs = evalgate(t, "gate", "--summary", summaryFile, "--criteria", crit, "--judgments", j)
	if code != 0 || !strings.Contains(out, "P@1 (LLM-filled)  100.0%") {
		t.Fatalf("gate --judgments: exit %d\n%s\n%s", code, out, errs)
	}
	// A bad judgments line is bad input, named.
	bad := write(t, dir, "bad.jsonl", `{"query_id":"q1","doc_id":"d9","grade":2.5}`+"\n")
	code, _, errs = evalgate(t, "score", "--gold", g, "--run", r, "--judgments", bad)
	if code != 2 || !strings.Contains(errs, "bad.jsonl:1") {
		t.Fatalf("bad judgments: exit %d: %s", code, errs)
	}
}
