package schema

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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
		if len(v) != 10_000 || cap(v) != 10<<10 {
			t.Fatalf("len %d cap %d, want 10000 and the size class's 10240", len(v), cap(v))
		}
		b := bufferOf(v, &r)
		if b.Len() != 40_000 {
			t.Fatalf("buffer of %d bytes, want 40000", b.Len())
		}
		b.Release()
		w := recycledSlice[int32](&r, 9_000) // same class: 40 KiB
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

// TestSizeClasses checks that a buffer is served from the smallest class
// that holds it, at most a quarter larger, and freed into the largest
// class it fills.
func TestSizeClasses(t *testing.T) {
	for n := 4 << 10; n < 3<<20; n += 1 + n/97 {
		up := classUp(n)
		if size := classSize(up); size < n || size > n+n/4 || (up > 0 && classSize(up-1) >= n) {
			t.Fatalf("classUp(%d) = %d of %d bytes", n, up, size)
		}
		down := classDown(n)
		if size := classSize(down); size > n || classSize(down+1) <= n {
			t.Fatalf("classDown(%d) = %d of %d bytes", n, down, size)
		}
		if classDown(classSize(up)) != up {
			t.Fatalf("a buffer of class %d is not freed into it", up)
		}
	}
}

// TestTextRunReuseMemory reads a TREC run of many blocks with and without
// ReuseMemory: the rows are the same, though later blocks are parsed into
// the memory of released ones.
func TestTextRunReuseMemory(t *testing.T) {
	var b strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&b, "q%05d Q0 d%07d %d %.4f run\n", i/100, (i*7919)%1_000_003, i%100+1, float64(200_000-i)/7)
	}
	p := filepath.Join(t.TempDir(), "run.trec")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	want := readContents(t, p, Options{BlockSize: 256 << 10})
	got := readContents(t, p, Options{BlockSize: 256 << 10, ReuseMemory: true})
	if len(got.RunLong) != 200_000 || !reflect.DeepEqual(got.RunLong, want.RunLong) {
		t.Fatalf("%d rows with ReuseMemory, differing from the %d without", len(got.RunLong), len(want.RunLong))
	}
}
