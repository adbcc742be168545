package coordinator

import (
	"testing"

	"github.com/evalgate/evalgate/shard"
)

// TestPartBufferLargestFirst: the buffer tracks the total, finds the
// shard with the most rows (lowest id among equals) and empties a shard
// on take.
func TestPartBufferLargestFirst(t *testing.T) {
	row := func(n int) *shard.Rows {
		var r shard.Rows
		for i := 0; i < n; i++ {
			r.Append(int64(i), "q", nil, []int32{1}, []uint32{0, 1, 2})
		}
		return &r
	}
	unit := row(1).Size()
	b := newPartBuffer(5)
	if b.largest() != -1 {
		t.Fatal("empty buffer has a largest shard")
	}
	b.add(3, row(2))
	b.add(1, row(2))
	b.add(4, row(1))
	if got := b.largest(); got != 1 {
		t.Fatalf("largest = %d, want 1 (ties go to the lowest id)", got)
	}
	b.add(4, row(2))
	if got, total := b.largest(), b.total; got != 4 || total != 7*unit {
		t.Fatalf("largest = %d, total %d, want 4, %d", got, total, 7*unit)
	}
	if r := b.take(4); r.Len() != 3 || b.total != 4*unit {
		t.Fatalf("take(4): %d rows, total %d", r.Len(), b.total)
	}
	if got := b.largest(); got != 1 {
		t.Fatalf("largest after take = %d, want 1", got)
	}
	b.take(1)
	b.take(3)
	if b.largest() != -1 || b.total != 0 || b.take(2) != nil {
		t.Fatal("buffer not empty after taking every shard")
	}
}
