package metric

import (
	"cmp"
	"math"
	"slices"
)

// Holm adjusts a family of p-values for multiple comparisons by Holm's
// step-down procedure (Holm 1979): with the m p-values sorted ascending,
// p(1) ≤ … ≤ p(m), the adjusted
//
//	p̃(i) = max over j ≤ i of min(1, (m − j + 1) · p(j)).
//
// Rejecting every hypothesis whose adjusted p-value is below α keeps the
// family-wise error rate at α whatever the dependence between the tests.
// An adjusted p-value is never below its raw one, and the adjustment keeps
// the order of the p-values (ties stay tied).
//
// The result is in the order of p. NaN entries (no p-value) are not part
// of the family: m counts the others, and they stay NaN. p is not changed.
func Holm(p []float64) []float64 {
	adj := make([]float64, len(p))
	order := make([]int, 0, len(p))
	for i, x := range p {
		adj[i] = math.NaN()
		if !math.IsNaN(x) {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(p[a], p[b]) })
	m := len(order)
	running := 0.0
	for j, i := range order {
		running = max(running, min(1, float64(m-j)*p[i]))
		adj[i] = running
	}
	return adj
}
