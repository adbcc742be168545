package schema

import "encoding/binary"

// hybridOut appends values of bit width bw in Parquet's RLE / bit-packed
// hybrid encoding (definition levels, dictionary indices) to b. A run is
// a varint header, count<<1 for an RLE run followed by the value in
// (bw+7)/8 little-endian bytes, or groups<<1|1 for a bit-packed run
// followed by groups of 8 values packed LSB first in bw bytes each. Every
// bit-packed run but the last holds a multiple of 8 values; the last is
// padded with zeros (the page header says how many values there are).
//
// Values come in runs (put): a run long enough to be an RLE run once the
// bit-packed values before it are filled up to a multiple of 8 becomes
// one, shorter runs are bit-packed. Query id indices (one run a query)
// and levels without nulls (one run a page) cost a few bytes; rank
// indices (a new value every row) are bit-packed.
type hybridOut struct {
	b   []byte
	bw  uint
	lit []uint32 // values of the bit-packed run being collected
	v   uint32   // the value of the pending run
	n   int      // its length, 0 when there is none
}

// maxLiteral is the most values collected for one bit-packed run before
// its whole groups are written.
const maxLiteral = 63 * 8

func (h *hybridOut) reset(b []byte, bw uint) {
	h.b, h.bw, h.lit, h.n = b, bw, h.lit[:0], 0
}

// put appends k copies of v.
func (h *hybridOut) put(v uint32, k int) {
	if h.n > 0 && v == h.v {
		h.n += k
		return
	}
	h.settle()
	h.v, h.n = v, k
}

// settle writes out or collects the pending run.
func (h *hybridOut) settle() {
	if h.n == 0 {
		return
	}
	fill := (8 - len(h.lit)%8) % 8
	if h.n-fill >= 8 {
		for range fill {
			h.lit = append(h.lit, h.v)
		}
		h.bitPack(h.lit)
		h.lit = h.lit[:0]
		h.rle(h.v, h.n-fill)
	} else {
		for range h.n {
			h.lit = append(h.lit, h.v)
		}
		if len(h.lit) >= maxLiteral {
			whole := len(h.lit) &^ 7
			h.bitPack(h.lit[:whole])
			h.lit = h.lit[:copy(h.lit, h.lit[whole:])]
		}
	}
	h.n = 0
}

// finish writes what is pending and returns the encoded bytes.
func (h *hybridOut) finish() []byte {
	if len(h.lit) == 0 && h.n > 0 {
		h.rle(h.v, h.n)
		h.n = 0
	}
	h.settle()
	if len(h.lit) > 0 {
		for len(h.lit)%8 != 0 {
			h.lit = append(h.lit, 0)
		}
		h.bitPack(h.lit)
		h.lit = h.lit[:0]
	}
	return h.b
}

func (h *hybridOut) rle(v uint32, k int) {
	h.b = binary.AppendUvarint(h.b, uint64(k)<<1)
	for i := uint(0); i < h.bw; i += 8 {
		h.b = append(h.b, byte(v>>i))
	}
}

// bitPack writes vs, a multiple of 8 values, as one bit-packed run.
func (h *hybridOut) bitPack(vs []uint32) {
	if len(vs) == 0 {
		return
	}
	h.b = binary.AppendUvarint(h.b, uint64(len(vs)/8)<<1|1)
	var acc uint64
	var bits uint
	for _, v := range vs {
		acc |= uint64(v) << bits
		bits += h.bw
		for bits >= 8 {
			h.b = append(h.b, byte(acc))
			acc >>= 8
			bits -= 8
		}
	}
}
