package schema

import (
	"fmt"
	"testing"
)

// BenchmarkIDsValid validates a column of 100,000 doc ids of 9 bytes
// that is already in memory (a decoded Parquet page; a mapped Arrow
// file's first read costs its page faults on top).
func BenchmarkIDsValid(b *testing.B) {
	const n = 100_000
	ids := NewStrings(n, 9*n)
	for i := range n {
		ids.Append(fmt.Sprintf("d%08d", (i*7919)%1_000_003))
	}
	a := ids.Array()
	defer a.Release()
	b.SetBytes(9 * n)
	for range b.N {
		if !idsValid(a) {
			b.Fatal("valid ids reported invalid")
		}
	}
}

// BenchmarkAllFinite checks 100,000 scores.
func BenchmarkAllFinite(b *testing.B) {
	v := make([]float64, 100_000)
	for i := range v {
		v[i] = float64(len(v)-i) / 7
	}
	b.SetBytes(8 * int64(len(v)))
	for range b.N {
		if !allFinite(v) {
			b.Fatal("finite scores reported not finite")
		}
	}
}
