package metric

import (
	"math"
	"testing"
)

func TestExactLog2(t *testing.T) {
	// math.Log2 on amd64 is within one ulp; the table must agree to the ulp
	// and be exact on powers of two.
	for n := int64(1); n < 5000; n++ {
		got := exactLog2(n)
		want := math.Log2(float64(n))
		if ulp := math.Nextafter(want, math.Inf(1)) - want; math.Abs(got-want) > ulp {
			t.Fatalf("log2(%d) = %v, math.Log2 = %v", n, got, want)
		}
		if n&(n-1) == 0 && got != want {
			t.Fatalf("log2(%d) = %v, want exactly %v", n, got, want)
		}
	}
	// Known correctly rounded values.
	for _, c := range []struct {
		n    int64
		bits uint64
	}{
		{3, 0x3ff95c01a39fbd68}, // log2(3) = 1.584962500721156
		{10, 0x400a934f0979a371},
	} {
		if got := math.Float64bits(exactLog2(c.n)); got != c.bits {
			t.Errorf("log2(%d) bits = %#x, want %#x", c.n, got, c.bits)
		}
	}
}

func TestLog2TableGrows(t *testing.T) {
	tab := log2Of(5000)
	if len(tab) < 5000 {
		t.Fatalf("table has %d entries", len(tab))
	}
	if tab[4998] != exactLog2(5000) {
		t.Fatal("grown entry differs")
	}
	if tab[0] != 1 || tab[2] != 2 {
		t.Fatalf("table starts %v %v %v", tab[0], tab[1], tab[2])
	}
}
