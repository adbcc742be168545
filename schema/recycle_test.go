package schema

import (
	"testing"
	"unsafe"
)

// TestRecyclerReusesReleasedBuffers checks that the last Release of an
// array's buffer hands its memory back for the next batch of that size
// class, and that memory too large or too small to pool is still served.
func TestRecyclerReusesReleasedBuffers(t *testing.T) {
	var r recycler
	reused := false
	// sync.Pool may drop a buffer (the race detector drops some on
	// purpose): one reuse in many tries shows the path works.
	for range 100 {
		v := recycledSlice[int32](&r, 10_000)
		if len(v) != 10_000 || cap(v) != 16<<10 {
			t.Fatalf("len %d cap %d, want 10000 and the size class's 16384", len(v), cap(v))
		}
		b := bufferOf(v, &r)
		if b.Len() != 40_000 {
			t.Fatalf("buffer of %d bytes, want 40000", b.Len())
		}
		b.Release()
		w := recycledSlice[int32](&r, 9_000) // same class: 2^15 bytes
		if unsafe.SliceData(w) == unsafe.SliceData(v) {
			reused = true
			break
		}
	}
	if !reused {
		t.Fatal("a released buffer was never reused")
	}
	if got := r.get(10); len(got) != 10 {
		t.Fatalf("small get: %d bytes", len(got))
	}
	if got := r.Allocate(5000); len(got) != 5000 || got[4999] != 0 {
		t.Fatal("Allocate must return zeroed memory of the size asked")
	}
	g := r.Reallocate(6000, []byte{1, 2, 3})
	if len(g) != 6000 || g[2] != 3 || g[5999] != 0 {
		t.Fatal("Reallocate must keep the content and zero the rest")
	}
	if s := recycledSlice[byte](nil, 7); len(s) != 7 {
		t.Fatal("no recycler: a new slice")
	}
}
