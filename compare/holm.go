package compare

import (
	"math"

	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/summary"
)

// AdjustHolm adjusts the p-values of k > 1 comparisons against one
// reference: for each measure (overall, and in each tag group compared),
// the p-values of the k comparisons are one family, adjusted with Holm's
// step-down procedure (metric.Holm). It sets each MeasureComparison's
// PValueHolm and each Comparison's HolmComparisons to k; the raw p-values
// stay. A comparison without a p-value for a measure (no permutations)
// is left out of that measure's family. With one comparison (or none)
// nothing changes: Holm's adjustment of one p-value is the p-value.
func AdjustHolm(comparisons []*summary.Summary) {
	if len(comparisons) < 2 {
		return
	}
	type key struct{ group, measure string }
	families := map[key][]*summary.MeasureComparison{}
	var order []key
	add := func(group string, ms []summary.MeasureComparison) {
		for i := range ms {
			k := key{group, ms[i].Name}
			if _, ok := families[k]; !ok {
				order = append(order, k)
			}
			families[k] = append(families[k], &ms[i])
		}
	}
	for _, s := range comparisons {
		if s.Comparison == nil {
			continue
		}
		s.Comparison.HolmComparisons = len(comparisons)
		add("", s.Comparison.Measures)
		for _, g := range s.Comparison.Groups {
			add(g.Tag+"="+g.Value, g.Measures)
		}
	}
	for _, k := range order {
		family := families[k]
		p := make([]float64, len(family))
		for i, mc := range family {
			p[i] = math.NaN()
			if mc.PValue != nil {
				p[i] = *mc.PValue
			}
		}
		for i, adj := range metric.Holm(p) {
			if !math.IsNaN(adj) {
				family[i].PValueHolm = &adj
			}
		}
	}
}
