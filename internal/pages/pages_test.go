package pages

import (
	"testing"
	"unsafe"
)

// TestPrefaultWritesEveryPage checks that Prefault writes an element in
// every page a slice spans, wherever the slice starts, and changes no
// value: it writes through a slice whose elements are all non-zero but
// for the ones it must reach, then checks which it zeroed.
func TestPrefaultWritesEveryPage(t *testing.T) {
	type slot struct {
		a uint64
		b uint32
	}
	for _, n := range []int{1, 2, 170, 171, 5000, 100003} {
		s := make([]slot, n)
		for i := range s {
			s[i] = slot{a: 1, b: 1}
		}
		Prefault(s)
		base := uintptr(unsafe.Pointer(&s[0]))
		width := unsafe.Sizeof(s[0])
		touched := map[uintptr]bool{}
		for i := range s {
			if s[i] == (slot{}) {
				touched[(base+uintptr(i)*width)/size] = true
			}
		}
		first, last := base/size, (base+uintptr(n)*width-1)/size
		for p := first; p <= last; p++ {
			// An element straddling two pages counts for the page it starts
			// on; the page it ends on has a later element, or is the last.
			if !touched[p] && !(p == last && s[n-1] == (slot{})) {
				t.Fatalf("n=%d: page %d of %d..%d not written", n, p, first, last)
			}
		}
		if s[n-1] != (slot{}) {
			t.Fatalf("n=%d: last element not written", n)
		}
	}
}

func TestPrefaultKeepsZeroSlices(t *testing.T) {
	s := make([]int32, 3000)
	Prefault(s)
	for i, v := range s {
		if v != 0 {
			t.Fatalf("s[%d] = %d", i, v)
		}
	}
	Prefault([]struct{}{{}, {}})
	Prefault([]int64(nil))
}
