package schema

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow/go/v16/arrow/array"
)

// naiveRunEnd is RunEnd row by row: the reference.
func naiveRunEnd(values []string, from int, id string) int {
	for from < len(values) && values[from] == id {
		from++
	}
	return from
}

// TestRunEndMatchesRowByRow compares RunEnd with a row-by-row scan on
// columns built to defeat a byte-level shortcut: ids of one length that
// differ in one byte anywhere, ids that are repeats of each other ("ab",
// "abab"), runs of every length, in sliced arrays.
func TestRunEndMatchesRowByRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pools := [][]string{
		{"q0000001", "q0000002", "q0000011", "r0000001"},
		{"ab", "abab", "a", "b", "aba"},
		{"x", "xx", "xxx", "xxxxxxxxxxxxxxxxx", "xxxxxxxxxxxxxxxxy"},
		{"é", "éé", "日本", "日本日本"},
	}
	for trial := range 400 {
		pool := pools[trial%len(pools)]
		var values []string
		for len(values) < 600 {
			id := pool[rng.IntN(len(pool))]
			for range 1 + rng.IntN(70) {
				values = append(values, id)
			}
		}
		b := NewStrings(len(values), 0)
		for _, v := range values {
			b.Append(v)
		}
		arr := b.Array()
		lo := rng.IntN(40)
		sliced := arr
		if lo > 0 {
			sliced = arrSlice(arr, lo, len(values))
		}
		vals := values[lo:]
		for from := 0; from <= len(vals); from++ {
			for _, id := range append([]string{"zz"}, pool...) {
				if got, want := RunEnd(sliced, from, id), naiveRunEnd(vals, from, id); got != want {
					t.Fatalf("trial %d: RunEnd(from %d, %q) = %d, want %d", trial, from, id, got, want)
				}
			}
		}
		if lo > 0 {
			sliced.Release()
		}
		arr.Release()
	}
}

func BenchmarkRunEnd(b *testing.B) {
	const groups, rows = 2000, 100
	s := NewStrings(groups*rows, 0)
	for g := range groups {
		for range rows {
			s.Append(fmt.Sprintf("q%07d", g))
		}
	}
	arr := s.Array()
	defer arr.Release()
	b.Run("RunEnd", func(b *testing.B) {
		for b.Loop() {
			for i := 0; i < arr.Len(); {
				i = RunEnd(arr, i, arr.Value(i))
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*groups*rows), "ns/row")
	})
	b.Run("rowByRow", func(b *testing.B) {
		for b.Loop() {
			id := arr.Value(0)
			for i := range arr.Len() {
				if v := arr.Value(i); v != id {
					id = v
				}
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*groups*rows), "ns/row")
	})
}

// arrSlice returns rows [lo,hi) of a as a new reference.
func arrSlice(a *array.String, lo, hi int) *array.String {
	return array.NewSlice(a, int64(lo), int64(hi)).(*array.String)
}
