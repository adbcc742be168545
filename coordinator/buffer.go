package coordinator

import (
	"container/heap"

	"github.com/evalgate/evalgate/shard"
)

// partBuffer holds, per shard, the rows that wait for the shard's next
// part to fill: compact copies, so the ingest's units (which hold rows of
// many shards) are released once committed. It keeps the shards that hold
// rows in a max-heap by buffered bytes, so the largest is found in
// O(log S) when the budget forces a part out early. Its bookkeeping takes
// about 24 bytes per shard. It is used from one goroutine.
type partBuffer struct {
	rows  []*shard.Rows // per shard; nil when empty
	size  []int         // rows[s].Size()
	pos   []int32       // index of s in heap, -1 when absent
	heap  []int32       // shards with rows: largest first, then lowest id
	total int           // sum of size
}

func newPartBuffer(shards int) *partBuffer {
	b := &partBuffer{rows: make([]*shard.Rows, shards), size: make([]int, shards), pos: make([]int32, shards)}
	for s := range b.pos {
		b.pos[s] = -1
	}
	return b
}

// add copies rows to shard s's buffer.
func (b *partBuffer) add(s int, rows *shard.Rows) {
	if b.rows[s] == nil {
		b.rows[s] = &shard.Rows{}
	}
	b.rows[s].AppendRows(rows)
	n := b.rows[s].Size()
	b.total += n - b.size[s]
	b.size[s] = n
	if b.pos[s] < 0 {
		heap.Push(partHeap{b}, int32(s))
	} else {
		heap.Fix(partHeap{b}, int(b.pos[s]))
	}
}

// take removes and returns shard s's buffered rows (nil if none).
func (b *partBuffer) take(s int) *shard.Rows {
	if b.pos[s] >= 0 {
		heap.Remove(partHeap{b}, int(b.pos[s]))
	}
	rows := b.rows[s]
	b.total -= b.size[s]
	b.rows[s], b.size[s] = nil, 0
	return rows
}

// largest returns the shard with the most buffered bytes (the lowest id
// among equals), or -1 if none holds rows.
func (b *partBuffer) largest() int {
	if len(b.heap) == 0 {
		return -1
	}
	return int(b.heap[0])
}

// partHeap is the container/heap view of a partBuffer.
type partHeap struct{ b *partBuffer }

func (h partHeap) Len() int { return len(h.b.heap) }

func (h partHeap) Less(i, j int) bool {
	si, sj := h.b.heap[i], h.b.heap[j]
	if h.b.size[si] != h.b.size[sj] {
		return h.b.size[si] > h.b.size[sj]
	}
	return si < sj
}

func (h partHeap) Swap(i, j int) {
	b := h.b
	b.heap[i], b.heap[j] = b.heap[j], b.heap[i]
	b.pos[b.heap[i]], b.pos[b.heap[j]] = int32(i), int32(j)
}

func (h partHeap) Push(x any) {
	s := x.(int32)
	h.b.pos[s] = int32(len(h.b.heap))
	h.b.heap = append(h.b.heap, s)
}

func (h partHeap) Pop() any {
	b := h.b
	s := b.heap[len(b.heap)-1]
	b.heap = b.heap[:len(b.heap)-1]
	b.pos[s] = -1
	return s
}
