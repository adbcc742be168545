package ingest

import (
	"fmt"
	"slices"
	"testing"
)

// BenchmarkRank interns one query's ranking of 100 documents, 3 of them
// among its 5 judged ones, as Join does for every query of a run.
func BenchmarkRank(b *testing.B) {
	docs := make([]string, 100)
	for i := range docs {
		docs[i] = fmt.Sprintf("d%08d", i*7919)
	}
	judged := []string{docs[3], "d99999991", docs[40], "d99999992", docs[77]}
	var r Ranker
	b.ReportAllocs()
	for b.Loop() {
		r.Rank("q0000001", judged, docs, 0)
	}
}

// TestRankAfterLongRanking ranks a short query after a long one (whose
// table is larger): ids, duplicates and judged matches are the short
// query's alone.
func TestRankAfterLongRanking(t *testing.T) {
	var r Ranker
	long := make([]string, 5000)
	for i := range long {
		long[i] = fmt.Sprintf("d%d", i)
	}
	if rk := r.Rank("q1", []string{"d7"}, long, 0); len(rk.IDs) != 5000 || rk.IDs[7] != 0 {
		t.Fatalf("long ranking: %d ids, d7 has id %d", len(rk.IDs), rk.IDs[7])
	}
	rk := r.Rank("q2", []string{"b", "d7"}, []string{"d7", "a", "b", "a"}, 0)
	if want := []uint32{1, 2, 0}; !slices.Equal(rk.IDs, want) || !slices.Equal(rk.Duplicates, []int32{3}) {
		t.Fatalf("short ranking: ids %v duplicates %v, want %v and [3]", rk.IDs, rk.Duplicates, want)
	}
}
