package schema

import (
	"math/bits"
	"sync"
	"unsafe"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/apache/arrow/go/v16/arrow/memory"
)

// recycler holds the memory of released batches for the next ones a
// reader decodes, when its caller allows it (Options.ReuseMemory): a
// Parquet run read as fresh Go memory allocates its size again in new
// slices, which the kernel zeroes page by page and the collector then
// frees, at a cost comparable to decoding it. Buffers are kept by size
// class, four to a power of two (so a buffer is at most a quarter larger
// than asked for), in sync.Pools: an idle recycler holds nothing after two
// collections.
//
// It is the allocator of the buffers it hands out: an array built on them
// returns them on its last Release (memory.Buffer calls Free). Memory from
// get is not zeroed; the decoder writes every byte it exposes.
type recycler struct {
	classes [4 * (maxRecycledLog + 1)]sync.Pool
}

const (
	minRecycledLog = 12 // 4 KiB: smaller buffers are cheap to allocate
	maxRecycledLog = 30 // 1 GiB
)

// batchMemory is the recycler of every reader that reuses memory.
var batchMemory recycler

// Size class c holds buffers of classSize(c) bytes or more: 2^k + q
// quarters of 2^k for c = 4k+q, q in [0,4).
func classSize(c int) int { k, q := c/4, c%4; return 1<<k + q<<(k-2) }

// classUp returns the smallest class whose size is at least n (n > 0).
func classUp(n int) int {
	k := bits.Len(uint(n)) - 1 // 2^k ≤ n < 2^(k+1)
	if k < 2 {
		return 4 * k
	}
	q := (n - 1<<k + 1<<(k-2) - 1) >> (k - 2) // quarters above 2^k, rounded up
	return 4*k + q                            // q = 4 is class 4(k+1)
}

// classDown returns the largest class whose size is at most n (n > 0).
func classDown(n int) int {
	k := bits.Len(uint(n)) - 1
	if k < 2 {
		return 4 * k
	}
	return 4*k + (n-1<<k)>>(k-2)
}

// get returns n bytes of unspecified content, with the capacity of their
// size class.
func (r *recycler) get(n int) []byte {
	if n < 1<<minRecycledLog || n > 1<<maxRecycledLog {
		return make([]byte, n)
	}
	c := classUp(n)
	if p, ok := r.classes[c].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, classSize(c))
}

// Free keeps b for a later get of at most cap(b) bytes.
func (r *recycler) Free(b []byte) {
	if cap(b) < 1<<minRecycledLog || cap(b) >= 1<<(maxRecycledLog+1) {
		return
	}
	b = b[:0]
	r.classes[classDown(cap(b))].Put(&b)
}

// Allocate returns size zeroed bytes (memory.Allocator).
func (r *recycler) Allocate(size int) []byte {
	b := r.get(size)
	clear(b)
	return b
}

// Reallocate returns b grown or shrunk to size bytes, its content kept and
// any new bytes zeroed (memory.Allocator).
func (r *recycler) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		old := len(b)
		b = b[:size]
		if size > old {
			clear(b[old:])
		}
		return b
	}
	nb := r.Allocate(size)
	copy(nb, b)
	r.Free(b)
	return nb
}

// recycledSlice returns n values of unspecified content from r, or a new
// zeroed slice when r is nil.
func recycledSlice[T any](r *recycler, n int) []T {
	if r == nil || n == 0 {
		return make([]T, n)
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	b := r.get(n * size)
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), cap(b)/size)[:n]
}

// bufferOf wraps s as an Arrow buffer whose last Release returns its
// memory (all of its capacity) to r; with r nil the collector frees it.
func bufferOf[T any](s []T, r *recycler) *memory.Buffer {
	if r == nil || cap(s) == 0 {
		return memory.NewBufferBytes(bytesOf(s))
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	all := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), cap(s)*size)
	return memory.NewBufferWithAllocator(all[:len(s)*size], r)
}

// newRecycledStrings is NewStrings with its memory from mem (nil: new
// memory).
func newRecycledStrings(mem *recycler, n, bytes int) Strings {
	if mem == nil {
		return NewStrings(n, bytes)
	}
	off := recycledSlice[int32](mem, n+1)[:1]
	off[0] = 0
	return Strings{Offsets: off, Data: recycledSlice[byte](mem, bytes)[:0]}
}

// free returns b's memory to mem (if not nil) when no array was made of it.
func (b *Strings) free(mem *recycler) {
	if mem != nil {
		mem.Free(bytesOf(b.Offsets[:cap(b.Offsets)]))
		mem.Free(b.Data[:cap(b.Data)])
	}
}

// arrayOf wraps b as a utf8 array with a validity mask (nil: all valid),
// whose memory goes back to mem (if not nil) on its last Release.
func (b *Strings) arrayOf(valid []bool, mem *recycler) *array.String {
	bm, nulls := validityBitmap(valid)
	ob, db := bufferOf(b.Offsets, mem), bufferOf(b.Data, mem)
	defer ob.Release()
	defer db.Release()
	d := array.NewData(arrow.BinaryTypes.String, b.Len(), []*memory.Buffer{bm, ob, db}, nil, nulls, 0)
	defer d.Release()
	return array.NewStringData(d)
}
