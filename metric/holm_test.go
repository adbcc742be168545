package metric

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Holm's adjustment against values worked out by hand.
func TestHolmHandComputed(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		name    string
		p, want []float64
	}{
		{"none", []float64{}, []float64{}},
		{"one comparison: unchanged", []float64{0.03}, []float64{0.03}},
		// sorted 0.01, 0.02, 0.04: 3·0.01 = 0.03; max(0.03, 2·0.02) = 0.04;
		// max(0.04, 1·0.04) = 0.04 — given out of order.
		{"three", []float64{0.04, 0.01, 0.02}, []float64{0.04, 0.03, 0.04}},
		// 4·0.005 = 0.02; 3·0.01 = 0.03; 2·0.03 = 0.06; max(0.06, 0.04) = 0.06:
		// the step-down maximum carries the third value to the fourth.
		{"monotone maximum", []float64{0.005, 0.01, 0.03, 0.04}, []float64{0.02, 0.03, 0.06, 0.06}},
		// 3·0.125 = 0.375; 2·0.625 = 1.25 → 1; 1·0.75 = 0.75, but the running
		// maximum is 1.
		{"capped at 1", []float64{0.75, 0.125, 0.625}, []float64{1, 0.375, 1}},
		// ties: 2·0.02 = 0.04 for both.
		{"ties", []float64{0.02, 0.02}, []float64{0.04, 0.04}},
		// NaN is outside the family: m = 2.
		{"NaN left out", []float64{nan, 0.01, 0.03}, []float64{nan, 0.02, 0.03}},
		{"randomization-test floor", []float64{1.0 / 1001, 1.0 / 1001, 0.5}, []float64{3.0 / 1001, 3.0 / 1001, 0.5}},
	} {
		got := Holm(tc.p)
		if len(got) != len(tc.want) {
			t.Fatalf("%s: %d values for %d", tc.name, len(got), len(tc.want))
		}
		for i := range got {
			if !(got[i] == tc.want[i] || math.IsNaN(got[i]) && math.IsNaN(tc.want[i])) {
				t.Errorf("%s: Holm(%v) = %v, want %v", tc.name, tc.p, got, tc.want)
				break
			}
		}
	}
}

// The textbook properties on random families: an adjusted p-value is never
// below its raw one nor above 1, the adjustment keeps the order of the raw
// p-values, the smallest is multiplied by m (capped at 1), and the input
// is left as it was.
func TestHolmProperties(t *testing.T) {
	const seed = 7
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, seed))
	for range 2000 {
		m := 1 + r.IntN(12)
		p := make([]float64, m)
		for i := range p {
			p[i] = r.Float64()
			if r.IntN(4) == 0 { // ties, as a randomization test gives
				p[i] = float64(1+r.IntN(5)) / 1001
			}
		}
		in := append([]float64(nil), p...)
		adj := Holm(p)
		smallest := 0
		for i := range p {
			if p[i] != in[i] {
				t.Fatalf("Holm changed its input: %v, was %v", p, in)
			}
			if adj[i] < p[i] || adj[i] > 1 {
				t.Fatalf("Holm(%v)[%d] = %v: below the raw p-value or above 1", p, i, adj[i])
			}
			for j := range p {
				if p[i] < p[j] && adj[i] > adj[j] || p[i] == p[j] && adj[i] != adj[j] {
					t.Fatalf("Holm(%v) = %v: the order of %d and %d is not kept", p, adj, i, j)
				}
			}
			if p[i] < p[smallest] {
				smallest = i
			}
		}
		if want := math.Min(1, float64(m)*p[smallest]); adj[smallest] != want {
			t.Fatalf("Holm(%v): smallest adjusted to %v, want m·p = %v", p, adj[smallest], want)
		}
	}
}
