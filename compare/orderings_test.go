package compare

import (
	"testing"

	"github.com/evalgate/evalgate/summary"
)

// TestOrderings: Kendall's τ-b between the systems' order by human values
// and by LLM-filled values, per mean measure, the reference first.
func TestOrderings(t *testing.T) {
	mean := func(v float64) []summary.Measure {
		return []summary.Measure{{Name: "R@5", Value: v, Kind: "mean"}, {Name: "NumQ", Value: 10, Kind: "sum"}}
	}
	cmp := func(ref, v, refFilled, vFilled float64) *summary.Summary {
		return &summary.Summary{Measures: mean(v), Baseline: &summary.Baseline{Measures: mean(ref)},
			Filled: &summary.Summary{Measures: mean(vFilled), Baseline: &summary.Baseline{Measures: mean(refFilled)}}}
	}
	// Human order: reference < A < B; filled: reversed.
	got := Orderings([]*summary.Summary{cmp(0.1, 0.2, 0.3, 0.2), cmp(0.1, 0.3, 0.3, 0.1)})
	if len(got) != 1 || got[0].Measure != "R@5" || got[0].Systems != 3 || got[0].Tau == nil || *got[0].Tau != -1 {
		t.Fatalf("orderings %+v", got)
	}
	// The same order both ways.
	got = Orderings([]*summary.Summary{cmp(0.1, 0.2, 0.15, 0.25), cmp(0.1, 0.3, 0.15, 0.35)})
	if *got[0].Tau != 1 {
		t.Fatalf("same order: τ %v", *got[0].Tau)
	}
	if Orderings([]*summary.Summary{{Measures: mean(0.1), Baseline: &summary.Baseline{Measures: mean(0.2)}}}) != nil {
		t.Fatal("orderings without filled-in values")
	}
}
