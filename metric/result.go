package metric

import "github.com/evalgate/evalgate/internal/exact"

// Value is the reduced value of one measure over one group.
type Value struct {
	Measure Measure
	// Value is the mean over the group's queries, or the total for the
	// summed measures (NumQ, NumRel, NumRet, NumRelRet). It is rounded once
	// from the exact sum.
	Value float64
}

// GroupResult is the reduced result of one group.
type GroupResult struct {
	Name    string // Overall or "tag=value"
	Queries int64
	Values  []Value // in the Partial's measure order
	// BaseValues are the baseline run's values, in a paired evaluation.
	BaseValues []Value
}

// Reduce turns the exact sums into values: means rounded once, totals
// rounded once. Groups come back sorted by name, Overall first (the
// overall group is present even when empty).
func (p *Partial) Reduce() []GroupResult {
	p.Group(Overall)
	names := p.GroupNames()
	out := make([]GroupResult, 0, len(names))
	for _, name := range names {
		g := p.groups[name]
		gr := GroupResult{Name: name, Queries: g.Queries, Values: reduce(p.measures, g.Sums, g.Queries)}
		if g.Base != nil {
			gr.BaseValues = reduce(p.measures, g.Base, g.Queries)
		}
		out = append(out, gr)
	}
	return out
}

func reduce(measures []Measure, sums []exact.Sum, n int64) []Value {
	out := make([]Value, len(measures))
	for i, m := range measures {
		v := Value{Measure: m}
		if m.Summed() {
			v.Value = sums[i].Float64()
		} else {
			v.Value = sums[i].Mean(n)
		}
		out[i] = v
	}
	return out
}
