package synth

import (
	"slices"
	"testing"
)

// The gold set depends only on the seed and the query: runs of any
// quality share it.
func TestGoldIndependentOfRunQuality(t *testing.T) {
	a := Options{Queries: 100, Depth: 50, Seed: 3, Tags: true}
	b := Options{Queries: 100, Depth: 50, Seed: 3, Tags: true, RecallRate: 0.95, RankDecay: 0.4}
	differ := 0
	for i := range 100 {
		qa, qb := a.Generate(i), b.Generate(i)
		if qa.ID != qb.ID || !slices.Equal(qa.Relevant, qb.Relevant) || !slices.Equal(qa.Grades, qb.Grades) || !slices.Equal(qa.Tags, qb.Tags) {
			t.Fatalf("query %d: gold differs between run qualities:\n%+v\n%+v", i, qa, qb)
		}
		if !slices.Equal(qa.Ranking, qb.Ranking) {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("the rankings do not depend on the quality options")
	}
}

// With a rank decay, relevant documents crowd the top ranks; the default
// spreads them uniformly. Each retrieved relevant document appears once.
func TestRankDecayPutsRelevantOnTop(t *testing.T) {
	share := func(o Options) float64 {
		top, all := 0, 0
		for i := range 2000 {
			q := o.Generate(i)
			for r, d := range q.Ranking {
				if slices.Contains(q.Relevant, d) {
					all++
					if r < 5 {
						top++
					}
				}
			}
			seen := map[string]bool{}
			for _, d := range q.Ranking {
				if seen[d] {
					t.Fatalf("query %d ranks %s twice", i, d)
				}
				seen[d] = true
			}
		}
		return float64(top) / float64(all)
	}
	uniform := share(Options{Queries: 2000, Depth: 100, Seed: 1})
	decayed := share(Options{Queries: 2000, Depth: 100, Seed: 1, RecallRate: 0.95, RankDecay: 0.5})
	if uniform > 0.1 || decayed < 0.7 {
		t.Fatalf("share of retrieved relevant documents in the top 5: uniform %.2f (want about 0.05), decay 0.5 %.2f (want most)", uniform, decayed)
	}
}

func TestValidate(t *testing.T) {
	for _, o := range []Options{{Queries: 0, Depth: 10}, {Queries: 1, Depth: 0}, {Queries: 1, Depth: 10, RankDecay: 1},
		{Queries: 1, Depth: 10, RankDecay: -0.1}, {Queries: 1, Depth: 10, RecallRate: 1.5}} {
		if o.Validate() == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
