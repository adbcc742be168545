package coordinator

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/summary"
	"github.com/evalgate/evalgate/synth"
)

func pairedJob(gold, run, base string, pairs ...int) Job {
	job := newJob(gold, run)
	job.Baseline = Input{Path: base}
	job.Metric.Paired = true
	job.Metric.CurveDepth = 100
	job.Metric.Pairing = &metric.Pairing{Measures: pairs, Replicates: 1000, Permutations: 1000, Seed: 7, TopK: 5}
	return job
}

func genRun(t *testing.T, queries int, recall float64, f schema.Format) (string, string) {
	t.Helper()
	gold, run := synth.Paths(t.TempDir(), f)
	if err := synth.Write(context.Background(), synth.Options{Queries: queries, Depth: 50, Seed: 99, Format: f, Tags: f != schema.FormatTREC, RecallRate: recall}, gold, run); err != nil {
		t.Fatal(err)
	}
	return gold, run
}

func TestPairedSelfComparisonIsZero(t *testing.T) {
	gold, run := genRun(t, 2000, 0.7, schema.FormatJSONL)
	out, err := Score(context.Background(), pairedJob(gold, run, run, 1, 7))
	if err != nil {
		t.Fatal(err)
	}
	c := out.Summary.Comparison
	if c == nil || len(c.Measures) != 2 {
		t.Fatalf("comparison %+v", c)
	}
	for _, m := range c.Measures {
		if m.Delta != 0 || *m.CILow != 0 || *m.CIHigh != 0 || *m.PValue != 1 {
			t.Fatalf("%s against itself: delta %v, CI [%v, %v], p %v", m.Name, m.Delta, *m.CILow, *m.CIHigh, *m.PValue)
		}
	}
	if len(c.Regressed) != 0 {
		t.Fatalf("no query can regress against itself: %+v", c.Regressed)
	}
	b := out.Summary.Baseline
	for i, m := range out.Summary.Measures {
		if b.Measures[i] != m {
			t.Fatalf("baseline %s = %v, run %v", m.Name, b.Measures[i].Value, m.Value)
		}
	}
	curve := out.Summary.RecallCurve
	if len(curve.Run) != 100 || len(curve.Baseline) != 100 {
		t.Fatalf("curve of %d/%d points", len(curve.Run), len(curve.Baseline))
	}
	// The curve at k=5 and k=10 is R@5 and R@10 (the first two measures
	// are R@1 and R@5).
	r5, _ := out.Summary.Value("R@5")
	if d := curve.Run[4] - r5; d > 1e-12 || d < -1e-12 {
		t.Fatalf("curve[5] = %v, R@5 = %v", curve.Run[4], r5)
	}
}

func TestPairedDetectsARegression(t *testing.T) {
	gold, better := genRun(t, 2000, 0.8, schema.FormatTREC)
	_, worse := genRun(t, 2000, 0.55, schema.FormatTREC) // same seed: same gold set
	out, err := Score(context.Background(), pairedJob(gold, worse, better, 1))
	if err != nil {
		t.Fatal(err)
	}
	m := out.Summary.Comparison.Measures[0]
	if m.Name != "R@5" || m.Delta >= 0 || *m.CIHigh >= 0 || *m.CILow >= *m.CIHigh || *m.PValue > 0.01 {
		t.Fatalf("R@5: delta %v, CI [%v, %v], p %v: want a clear drop", m.Delta, *m.CILow, *m.CIHigh, *m.PValue)
	}
	if m.Delta < *m.CILow || m.Delta > *m.CIHigh {
		t.Fatalf("the observed delta %v lies outside its interval [%v, %v]", m.Delta, *m.CILow, *m.CIHigh)
	}
	rq := out.Summary.Comparison.Regressed
	if len(rq) != 5 || rq[0].Value >= rq[0].Baseline || rq[0].Baseline-rq[0].Value < rq[4].Baseline-rq[4].Value {
		t.Fatalf("regressed queries %+v", rq)
	}
}

// A tag group's paired comparison is the comparison of that group's
// queries alone: the same per-query draws, summed over the group. So
// scoring only the group's queries, without groups, gives the same bits.
func TestPairedGroupIsTheGroupAlone(t *testing.T) {
	gold, better := genRun(t, 3000, 0.8, schema.FormatJSONL)
	_, worse := genRun(t, 3000, 0.6, schema.FormatJSONL) // same seed: same gold set
	const group = "category=legal"
	job := pairedJob(gold, worse, better, 1, 7)
	job.Metric.Pairing.Groups = []string{group, "difficulty=hard"}
	out, err := Score(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	c := out.Summary.Comparison
	if len(c.Groups) != 2 {
		t.Fatalf("%d group comparisons, want 2: %+v", len(c.Groups), c.Groups)
	}

	// The same inputs restricted to the group's queries.
	dir := t.TempDir()
	keep := func(path, name string, queries map[string]bool) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var row struct {
				QueryID string            `json:"query_id"`
				Tags    map[string]string `json:"tags"`
			}
			if err := json.Unmarshal([]byte(line), &row); err != nil {
				t.Fatal(err)
			}
			if queries == nil && row.Tags["category"] == "legal" || queries[row.QueryID] {
				out = append(out, line)
			}
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(out, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	legalGold := keep(gold, "gold.jsonl", nil)
	ids := map[string]bool{}
	b, _ := os.ReadFile(legalGold)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var row struct {
			QueryID string `json:"query_id"`
		}
		_ = json.Unmarshal([]byte(line), &row)
		ids[row.QueryID] = true
	}
	alone, err := Score(context.Background(), pairedJob(legalGold, keep(worse, "worse.jsonl", ids), keep(better, "better.jsonl", ids), 1, 7))
	if err != nil {
		t.Fatal(err)
	}
	var got *summary.GroupComparison
	for i := range c.Groups {
		if c.Groups[i].Tag+"="+c.Groups[i].Value == group {
			got = &c.Groups[i]
		}
	}
	want := alone.Summary.Comparison
	if got == nil || got.Queries != alone.Summary.Counts.ScoredQueries || len(got.Measures) != len(want.Measures) {
		t.Fatalf("group %+v, alone %d queries", got, alone.Summary.Counts.ScoredQueries)
	}
	for i, m := range got.Measures {
		w := want.Measures[i]
		if m.Name != w.Name || m.Value != w.Value || m.Baseline != w.Baseline || *m.CILow != *w.CILow || *m.CIHigh != *w.CIHigh || *m.PValue != *w.PValue {
			t.Errorf("%s over %s: %+v (CI [%v, %v], p %v)\nalone: %+v (CI [%v, %v], p %v)", m.Name, group,
				m, *m.CILow, *m.CIHigh, *m.PValue, w, *w.CILow, *w.CIHigh, *w.PValue)
		}
	}
}
