package agreement

import (
	"fmt"
	"math"
)

// KendallTauB returns Kendall's τ-b between two scorings of the same
// systems: x[i] and y[i] are system i's scores under the two labellings
// (human only, and filled in by the LLM). With n_c concordant and n_d
// discordant pairs of systems, n_0 = n(n−1)/2 pairs in all, and n_1, n_2
// the pairs tied in x and in y (Kendall 1945):
//
//	τ_b = (n_c − n_d) / √((n_0 − n_1)(n_0 − n_2))
//
// A pair tied in both counts in n_1 and n_2 and in neither n_c nor n_d.
// Scores tie only when equal (==); the evalgate scores of a system are
// exact, so equal means equal. It takes O(n²) time, which suits the
// handful of systems a comparison holds.
//
// Different lengths, or a NaN score, is an error. NaN and ErrNoData for
// fewer than two systems; NaN and ErrUndefined when every system has the
// same score in x or in y (no ordering to compare).
func KendallTauB(x, y []float64) (float64, error) {
	if len(x) != len(y) {
		return math.NaN(), fmt.Errorf("kendall tau-b: %d scores against %d: want one pair per system", len(x), len(y))
	}
	for i := range x {
		if math.IsNaN(x[i]) || math.IsNaN(y[i]) {
			return math.NaN(), fmt.Errorf("kendall tau-b: system %d: score is NaN", i)
		}
	}
	n := len(x)
	if n < 2 {
		return math.NaN(), fmt.Errorf("kendall tau-b: %w: %d systems, want at least 2", ErrNoData, n)
	}
	var concordant, discordant, tiedX, tiedY int64
	for i := range n {
		for j := i + 1; j < n; j++ {
			dx, dy := compare(x[i], x[j]), compare(y[i], y[j])
			switch {
			case dx == 0 || dy == 0:
				if dx == 0 {
					tiedX++
				}
				if dy == 0 {
					tiedY++
				}
			case dx == dy:
				concordant++
			default:
				discordant++
			}
		}
	}
	pairs := int64(n) * int64(n-1) / 2
	if tiedX == pairs || tiedY == pairs {
		return math.NaN(), fmt.Errorf("kendall tau-b: %w: every system has the same score in one of the orderings", ErrUndefined)
	}
	return float64(concordant-discordant) / math.Sqrt(float64(pairs-tiedX)*float64(pairs-tiedY)), nil
}

func compare(a, b float64) int {
	switch {
	case a > b:
		return 1
	case a < b:
		return -1
	}
	return 0
}
