package schema

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDeltaPackedRoundTrip encodes runs of several lengths and shapes
// (constant, growing, random, the int32 extremes, whose deltas wrap) and
// decodes them back, with bytes after the run left for the caller.
func TestDeltaPackedRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := map[string]func(i int) int32{
		"constant": func(int) int32 { return 9 },
		"growing":  func(i int) int32 { return int32(i * 3) },
		"random":   func(int) int32 { return rng.Int32N(1000) },
		"extremes": func(i int) int32 {
			if i%2 == 0 {
				return math.MaxInt32
			}
			return math.MinInt32
		},
		"wide": func(int) int32 { return int32(rng.Uint32()) },
	}
	for name, f := range shapes {
		for _, n := range []int{0, 1, 2, 31, 32, 33, 127, 128, 129, 130, 1000} {
			v := make([]int32, n)
			for i := range v {
				v[i] = f(i)
			}
			b := appendDeltaPacked(nil, v)
			b = append(b, "tail"...)
			got, rest, err := decodeDeltaPacked(b, n, nil)
			if err != nil {
				t.Fatalf("%s, %d values: %v", name, n, err)
			}
			if !slices.Equal(got, v) || string(rest) != "tail" {
				t.Fatalf("%s, %d values: got %v (rest %q), want %v", name, n, got, rest, v)
			}
			if n > 0 {
				if _, _, err := decodeDeltaPacked(b, n-1, nil); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s, %d values where %d are allowed: %v", name, n, n-1, err)
				}
			}
		}
	}
}

// TestDeltaPackedConstantSize checks that ids of one length cost their
// lengths next to nothing: a header, and 5 bytes a block of 128.
func TestDeltaPackedConstantSize(t *testing.T) {
	v := make([]int32, 128*100+1)
	for i := range v {
		v[i] = 9
	}
	if n := len(appendDeltaPacked(nil, v)); n > 6+100*5 {
		t.Fatalf("%d equal lengths take %d bytes", len(v), n)
	}
}

// TestDeltaPackedCorrupt cuts an encoding short at every byte and sets
// bad header values: each is an error, never a panic.
func TestDeltaPackedCorrupt(t *testing.T) {
	v := make([]int32, 300)
	for i := range v {
		v[i] = int32(i * i % 977)
	}
	b := appendDeltaPacked(nil, v)
	for k := range len(b) {
		if _, _, err := decodeDeltaPacked(b[:k], len(v), nil); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut at %d of %d bytes: %v", k, len(b), err)
		}
	}
	header := func(block, minis, count uint64, rest ...byte) []byte {
		h := binary.AppendUvarint(nil, block)
		h = binary.AppendUvarint(h, minis)
		h = binary.AppendUvarint(h, count)
		return append(h, rest...)
	}
	for name, h := range map[string][]byte{
		"no values a block":          header(0, 4, 1, 0),
		"not a multiple of 128":      header(100, 4, 1, 0),
		"no miniblocks":              header(128, 0, 1, 0),
		"128 values in 3 miniblocks": header(128, 3, 1, 0),
		"more values than allowed":   header(128, 4, 11, 0),
		"bit width 40":               header(128, 4, 2, 0, 0, 40, 0, 0, 0),
		"no first value":             header(128, 4, 2),
	} {
		if _, _, err := decodeDeltaPacked(h, 10, nil); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// FuzzDeltaPacked decodes arbitrary bytes (never a panic) and, where they
// decode, checks that encoding the values and decoding again gives them
// back.
func FuzzDeltaPacked(f *testing.F) {
	f.Add(appendDeltaPacked(nil, []int32{9, 9, 9, 10, 3}), 10)
	f.Add(appendDeltaPacked(nil, []int32{math.MaxInt32, math.MinInt32, 0}), 3)
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		limit = min(max(limit, 0), 1<<16)
		v, _, err := decodeDeltaPacked(data, limit, nil)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		if len(v) > limit {
			t.Fatalf("%d values decoded past the limit of %d", len(v), limit)
		}
		again, rest, err := decodeDeltaPacked(appendDeltaPacked(nil, v), len(v), nil)
		if err != nil || len(rest) != 0 || !slices.Equal(again, v) {
			t.Fatalf("re-encoded %v: got %v, rest %d, %v", v, again, len(rest), err)
		}
	})
}
