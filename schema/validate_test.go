package schema

import (
	"math"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow/go/v16/arrow/array"
)

// allFiniteSlow is allFinite's definition.
func allFiniteSlow(v []float64) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// TestAllFinite puts each kind of value that is not finite, and the
// largest finite ones, at each position of blocks of several lengths.
func TestAllFinite(t *testing.T) {
	odd := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Float64frombits(0x7FF0000000000001), math.Float64frombits(0xFFFFFFFFFFFFFFFF)}
	fine := []float64{0, math.Copysign(0, -1), 1, -1, math.MaxFloat64, -math.MaxFloat64, math.SmallestNonzeroFloat64, math.Float64frombits(0x7FEFFFFFFFFFFFFF)}
	for _, n := range []int{0, 1, 7, 255, 256, 257, 1000} {
		v := make([]float64, n)
		for i := range v {
			v[i] = fine[i%len(fine)]
		}
		if !allFinite(v) {
			t.Fatalf("%d finite values: reported not finite", n)
		}
		for _, i := range []int{0, n / 2, n - 1} {
			if i < 0 || i >= n {
				continue
			}
			for _, x := range odd {
				saved := v[i]
				v[i] = x
				if allFinite(v) || allFinite(v) != allFiniteSlow(v) {
					t.Fatalf("%v at %d of %d: reported finite", x, i, n)
				}
				v[i] = saved
			}
		}
	}
}

// idsValidSlow is idsValid's definition, value by value.
func idsValidSlow(c *array.String) bool {
	for i := range c.Len() {
		if c.IsNull(i) || c.Value(i) == "" || !utf8.ValidString(c.Value(i)) {
			return false
		}
	}
	return true
}

// TestIDsValid checks idsValid against its definition on ASCII and
// multibyte ids, empty ones, values split inside a character, and
// offsets that decrease, including by more than an int32 difference
// holds.
func TestIDsValid(t *testing.T) {
	cases := []struct {
		name string
		off  []int32
		data string
		want bool
	}{
		{"ascii", []int32{0, 2, 5, 6}, "d1d22x", true},
		{"multibyte", []int32{0, 2, 5}, "é€x", true},
		{"empty value", []int32{0, 2, 2, 3}, "d1x", false},
		{"split character", []int32{0, 1, 3}, "é€", false},
		{"invalid utf8", []int32{0, 1, 2}, "a\xff", false},
		{"decreasing", []int32{0, 3, 2, 4}, "abcd", false},
		{"wrapping difference", []int32{0, math.MaxInt32, -1, 3}, "abc", false},
	}
	for _, c := range cases {
		a := StringArray(c.off, []byte(c.data))
		if got := idsValid(a); got != c.want {
			t.Errorf("%s: idsValid %v, want %v", c.name, got, c.want)
		}
		a.Release()
	}
	// Long columns: a bad value at each position of several blocks.
	for _, n := range []int{255, 256, 257, 1000} {
		off := make([]int32, n+1)
		var data []byte
		for i := range n {
			data = append(data, 'd', byte('0'+i%10))
			off[i+1] = int32(len(data))
		}
		for _, i := range []int{0, n / 2, n - 1} {
			bad := append([]int32(nil), off...)
			bad[i+1] = bad[i] // value i empty
			a := StringArray(bad, data)
			if idsValid(a) {
				t.Fatalf("%d ids, id %d empty: reported valid", n, i)
			}
			a.Release()
		}
		a := StringArray(off, data)
		if !idsValid(a) || !idsValidSlow(a) {
			t.Fatalf("%d valid ids: reported invalid", n)
		}
		a.Release()
	}
}

// FuzzIDsValid compares idsValid with its definition on ids cut from
// arbitrary bytes at arbitrary lengths.
func FuzzIDsValid(f *testing.F) {
	f.Add([]byte("d1d2d3"), []byte{2, 2, 2})
	f.Add([]byte("é€x"), []byte{2, 3, 1})
	f.Add([]byte("é€x"), []byte{1, 3, 2})
	f.Fuzz(func(t *testing.T, data, lens []byte) {
		off := []int32{0}
		for _, l := range lens {
			o := off[len(off)-1] + int32(l%8)
			if int(o) > len(data) {
				break
			}
			off = append(off, o)
		}
		a := StringArray(off, data)
		defer a.Release()
		if got, want := idsValid(a), idsValidSlow(a); got != want {
			t.Fatalf("offsets %v of %q: idsValid %v, want %v", off, data, got, want)
		}
	})
}
