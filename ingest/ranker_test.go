package ingest

import (
	"fmt"
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
