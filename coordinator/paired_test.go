package coordinator

import (
	"context"
	"testing"

	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/schema"
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
