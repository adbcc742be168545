package ingest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSortedByScoreIsSortedFunc(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for n := range 2000 {
		es := make([]entry, r.IntN(8))
		for i := range es {
			es[i] = entry{doc: fmt.Sprintf("d%d", r.IntN(3)), score: float64(r.IntN(3)), rank: int32(r.IntN(3)), pos: int64(r.IntN(3))}
		}
		if n%2 == 0 {
			slices.SortFunc(es, compareByScore)
			if r.IntN(2) == 0 && len(es) > 1 {
				i := r.IntN(len(es) - 1)
				es[i], es[i+1] = es[i+1], es[i]
			}
		}
		if got, want := sortedByScore(es), slices.IsSortedFunc(es, compareByScore); got != want {
			t.Fatalf("%v: sortedByScore %v, IsSortedFunc %v", es, got, want)
		}
	}
}
