package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// A baseline run scored with --only-run-queries is scored on the run's
// queries: its counts and warnings, and the table, say so — not the
// counts of a join over every gold query — in score and in run alike.
func TestBaselineRunCountsWhatItScored(t *testing.T) {
	dir := t.TempDir()
	gold := writeGold(t, dir)
	lines := func(name string, from, to int) string { // queries [from, to), relevant document at rank 1
		var b strings.Builder
		for q := from; q < to; q++ {
			fmt.Fprintf(&b, "q%03d Q0 rel 1 9 t\nq%03d Q0 x 2 8 t\n", q, q)
		}
		return write(t, dir, name, b.String())
	}
	run, base := lines("run.trec", 0, 50), lines("base.trec", 40, 100)
	var got []string
	for _, cmd := range []string{"score", "run"} {
		code, out, errs := evalgate(t, "--log-format", "console", cmd, "--gold", gold, "--run", run, "--baseline-run", base, "-m", "RR",
			"--only-run-queries", "--bootstrap", "20", "--permutations", "20", "--format", "json")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", cmd, code, errs)
		}
		var s struct {
			Baseline struct {
				Counts   map[string]int64
				Measures []struct{ Value float64 }
				Warnings []string
			}
		}
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatal(err)
		}
		b := s.Baseline
		// q040-q049 of the run's 50 queries are in the baseline: RR 10/50.
		if b.Counts["scored_queries"] != 50 || b.Counts["missing_scored_zero"] != 40 || b.Counts["missing_from_run"] != 40 ||
			b.Counts["gold_queries"] != 100 || b.Counts["run_queries"] != 60 || b.Measures[0].Value != 0.2 {
			t.Fatalf("%s: baseline counts %v, value %v", cmd, b.Counts, b.Measures)
		}
		want := []string{"the baseline is scored on the run's 50 scored queries, not on all 100 gold queries, so that each query is compared with itself",
			"40 queries of the 50 scored queries have no ranking in the baseline run; the baseline scores 0 on them"}
		if strings.Join(b.Warnings, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: baseline warnings\n%s\nwant\n%s", cmd, strings.Join(b.Warnings, "\n"), strings.Join(want, "\n"))
		}
		got = append(got, out[:strings.Index(out, `"execution"`)])
	}
	if got[0] != got[1] {
		t.Fatalf("score and run differ:\n%s\n%s", got[0], got[1])
	}
	code, out, _ := evalgate(t, "score", "--gold", gold, "--run", run, "--baseline-run", base, "-m", "RR", "--only-run-queries",
		"--bootstrap", "20", "--permutations", "20")
	if code != 0 || !strings.Contains(out, "baseline: "+base+", scored on the same 50 queries (40 of them have no ranking in it and score 0)") {
		t.Fatalf("table: exit %d\n%s", code, out)
	}
}
