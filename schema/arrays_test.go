package schema

import "testing"

// TestNullInt32Array checks all-null rank columns, from the shared zeroed
// memory and (beyond maxSharedNulls) from memory of their own, including
// one made after a longer one (the shared memory is cut to length).
func TestNullInt32Array(t *testing.T) {
	for _, n := range []int{0, 1, 9, 1000, 100_000, 17, maxSharedNulls/4 + 1} {
		a := NullInt32Array(n)
		if a.Len() != n || a.NullN() != n {
			t.Fatalf("n=%d: length %d, %d nulls", n, a.Len(), a.NullN())
		}
		for i, v := range a.Int32Values() {
			if v != 0 || !a.IsNull(i) {
				t.Fatalf("n=%d: row %d is %d, null %v", n, i, v, a.IsNull(i))
			}
		}
		a.Release()
	}
}
