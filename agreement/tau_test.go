package agreement

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// TestKendallTauBExamples checks τ-b against worked examples counted by
// hand.
func TestKendallTauBExamples(t *testing.T) {
	cases := []struct {
		name string
		x, y []float64
		want float64
	}{
		{
			// The example of SciPy's kendalltau documentation (τ-b,
			// -0.47140452079103173). By hand, over the 10 pairs of 5
			// items: concordant (1,5) (4,5); discordant (1,2) (1,3) (2,3)
			// (2,4) (3,4) (3,5); tied in x only (2,5); tied in both
			// (1,4). n_1 = 2 (12,12 and 2,2), n_2 = 1 (1,1):
			// τ_b = (2 − 6)/√((10 − 2)(10 − 1)) = −4/√72.
			name: "scipy", x: []float64{12, 2, 1, 12, 2}, y: []float64{1, 4, 7, 1, 0}, want: -4 / math.Sqrt(72),
		},
		{
			// No ties, τ_b = τ_a: concordant (1,2) (1,5) (2,5) (3,4)
			// (3,5) (4,5), discordant (1,3) (1,4) (2,3) (2,4):
			// τ = (6 − 4)/10.
			name: "no ties", x: []float64{1, 2, 3, 4, 5}, y: []float64{3, 4, 1, 2, 5}, want: 0.2,
		},
		{
			// The same ties in both orderings (Kendall 1945, the reason
			// for τ-b): n_c = 2, n_d = 0, n_0 = 3, n_1 = n_2 = 1:
			// τ_b = 2/√(2·2) = 1, where τ_a would be 2/3.
			name: "same ties", x: []float64{0.5, 0.5, 0.7}, y: []float64{0.1, 0.1, 0.9}, want: 1,
		},
		{name: "reversed", x: []float64{0.1, 0.2, 0.3, 0.4}, y: []float64{4, 3, 2, 1}, want: -1},
		{name: "two systems", x: []float64{0.3, 0.31}, y: []float64{0.5, 0.6}, want: 1},
	}
	for _, c := range cases {
		got, err := KendallTauB(c.x, c.y)
		if err != nil || !near(got, c.want) {
			t.Errorf("%s: τ_b = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}

// TestKendallTauBInvariance checks on random scores with ties that τ-b
// does not depend on the order of the systems or of the two orderings.
func TestKendallTauBInvariance(t *testing.T) {
	seed := uint64(7)
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 1))
	for range 200 {
		n := 2 + r.IntN(12)
		x, y := make([]float64, n), make([]float64, n)
		for i := range n {
			x[i], y[i] = float64(r.IntN(5))/4, float64(r.IntN(5))/4
		}
		want, werr := KendallTauB(x, y)
		px, py := make([]float64, n), make([]float64, n)
		for i, j := range r.Perm(n) {
			px[i], py[i] = x[j], y[j]
		}
		got, gerr := KendallTauB(px, py)
		swapped, serr := KendallTauB(y, x)
		if (werr == nil) != (gerr == nil) || (werr == nil) != (serr == nil) {
			t.Fatalf("%v %v: errors %v, %v, %v", x, y, werr, gerr, serr)
		}
		if werr == nil && (got != want || swapped != want || want < -1 || want > 1) {
			t.Fatalf("%v %v: τ_b %v, permuted %v, swapped %v", x, y, want, got, swapped)
		}
	}
}

// TestKendallTauBEdges checks the refusals.
func TestKendallTauBEdges(t *testing.T) {
	check := func(name string, x, y []float64, sentinel error) {
		t.Helper()
		got, err := KendallTauB(x, y)
		if !math.IsNaN(got) || err == nil || (sentinel != nil && !errors.Is(err, sentinel)) {
			t.Errorf("%s: %v, %v; want NaN and an error (%v)", name, got, err, sentinel)
		}
	}
	check("no systems", nil, nil, ErrNoData)
	check("one system", []float64{0.5}, []float64{0.4}, ErrNoData)
	check("all tied in y", []float64{0.1, 0.2, 0.3}, []float64{0.5, 0.5, 0.5}, ErrUndefined)
	check("all tied in x", []float64{0.1, 0.1}, []float64{0.2, 0.3}, ErrUndefined)
	check("lengths", []float64{0.1, 0.2}, []float64{0.1}, nil)
	check("NaN", []float64{0.1, math.NaN()}, []float64{0.1, 0.2}, nil)
}
