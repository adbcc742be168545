package schema

import (
	"encoding/binary"
	"math/bits"
	"slices"
)

// DELTA_BINARY_PACKED, for int32 values: the encoding of the lengths of a
// DELTA_LENGTH_BYTE_ARRAY page (the lengths, then the values' bytes one
// after another), which is how the flat Parquet writer stores string
// columns that are not dictionary-encoded. A header (values a block,
// miniblocks a block, value count, first value), then blocks of deltas:
// each the block's least delta, a bit width a miniblock, and the
// miniblocks, each 32 deltas less the least one, bit-packed LSB first.
// Arithmetic wraps around, as the format asks.

const (
	deltaBlock      = 128 // values a block
	deltaMiniblocks = 4   // miniblocks a block
	deltaMini       = deltaBlock / deltaMiniblocks
)

// appendDeltaPacked appends the encoding of v to b.
func appendDeltaPacked(b []byte, v []int32) []byte {
	b = binary.AppendUvarint(b, deltaBlock)
	b = binary.AppendUvarint(b, deltaMiniblocks)
	b = binary.AppendUvarint(b, uint64(len(v)))
	if len(v) == 0 {
		return binary.AppendVarint(b, 0)
	}
	b = binary.AppendVarint(b, int64(v[0]))
	var d [deltaBlock]uint32
	for i := 1; i < len(v); i += deltaBlock {
		n := min(deltaBlock, len(v)-i)
		least := v[i] - v[i-1]
		for k := range n {
			least = min(least, v[i+k]-v[i+k-1])
		}
		for k := range n {
			d[k] = uint32(v[i+k] - v[i+k-1] - least)
		}
		clear(d[n:])
		b = binary.AppendVarint(b, int64(least))
		minis := (n + deltaMini - 1) / deltaMini
		var width [deltaMiniblocks]uint
		for m := range minis {
			var or uint32
			for _, x := range d[m*deltaMini : (m+1)*deltaMini] {
				or |= x
			}
			width[m] = uint(bits.Len32(or))
		}
		for m := range deltaMiniblocks {
			b = append(b, byte(width[m]))
		}
		for m := range minis {
			b = appendBitPacked(b, d[m*deltaMini:(m+1)*deltaMini], width[m])
		}
	}
	return b
}

// appendBitPacked appends the values of v, of at most w bits each, packed
// LSB first in len(v)*w/8 bytes (len(v) is a multiple of 8).
func appendBitPacked(b []byte, v []uint32, w uint) []byte {
	if w == 0 {
		return b
	}
	var acc uint64
	var n uint
	for _, x := range v {
		acc |= uint64(x) << n
		n += w
		for n >= 8 {
			b = append(b, byte(acc))
			acc >>= 8
			n -= 8
		}
	}
	return b
}

// decodeDeltaPacked decodes a DELTA_BINARY_PACKED run of int32 values at
// the start of data into out (reused), refusing more than limit values,
// and returns them and the bytes after the run.
func decodeDeltaPacked(data []byte, limit int, out []int32) ([]int32, []byte, error) {
	var hdr [3]uint64
	for i := range hdr {
		x, k := binary.Uvarint(data)
		if k <= 0 {
			return nil, nil, corruptf("delta encoding header")
		}
		hdr[i], data = x, data[k:]
	}
	block, minis, count := hdr[0], hdr[1], hdr[2]
	if block == 0 || block%128 != 0 || block > 1<<16 || minis == 0 || block%minis != 0 || (block/minis)%32 != 0 {
		return nil, nil, corruptf("delta encoding of %d values a block in %d miniblocks", block, minis)
	}
	if count > uint64(limit) {
		return nil, nil, corruptf("delta encoding of %d values where %d are left", count, limit)
	}
	first, k := binary.Varint(data)
	if k <= 0 {
		return nil, nil, corruptf("delta encoding first value")
	}
	data = data[k:]
	// A block of 128 values takes at least 5 bytes (a least delta and
	// four bit widths of 0), so a count the bytes cannot hold is not
	// given room.
	out = slices.Grow(out[:0], int(min(count, 26*uint64(len(data))+1)))
	if count == 0 {
		return out, data, nil
	}
	out = append(out, int32(first))
	prev, per := int32(first), int(block/minis)
	widths := make([]byte, minis)
	for uint64(len(out)) < count {
		least, k := binary.Varint(data)
		if k <= 0 || len(data)-k < len(widths) {
			return nil, nil, corruptf("delta encoding block header")
		}
		copy(widths, data[k:])
		data = data[k+len(widths):]
		for _, w := range widths {
			if uint64(len(out)) == count {
				break // the rest of the block's miniblocks are absent
			}
			if w > 32 {
				return nil, nil, corruptf("delta encoding bit width %d", w)
			}
			size := per * int(w) / 8
			if len(data) < size {
				return nil, nil, corruptf("delta encoding miniblock past its page")
			}
			n := min(per, int(count)-len(out))
			out, prev = unpackDeltas(out, data[:size], n, uint(w), int32(least), prev)
			data = data[size:]
		}
	}
	return out, data, nil
}

// unpackDeltas appends n values to out: each the one before plus least
// plus the next w-bit delta of packed.
func unpackDeltas(out []int32, packed []byte, n int, w uint, least, prev int32) ([]int32, int32) {
	if w == 0 {
		for range n {
			prev += least
			out = append(out, prev)
		}
		return out, prev
	}
	var acc uint64
	var have uint
	mask := uint64(1)<<w - 1
	for range n {
		for have < w {
			acc |= uint64(packed[0]) << have
			packed = packed[1:]
			have += 8
		}
		prev += least + int32(uint32(acc&mask))
		out = append(out, prev)
		acc >>= w
		have -= w
	}
	return out, prev
}
