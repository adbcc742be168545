package schema

import (
	"encoding/binary"
	"math/bits"

	"github.com/apache/arrow/go/v16/arrow/array"
)

// RunEnd returns the first row at or after from of qids whose value is
// not id, or qids.Len() when there is none: where a query's rows end in a
// query_id column (the join's grouper, the Parquet writer's dictionary
// runs). A query's rows are consecutive equal values, so rather than comparing row by row it
// checks that the following rows have id's length and that the bytes they
// cover repeat the row before them, eight bytes at a time. It looks at
// twice as many rows each round, so finding a query's end takes time in
// proportion to its rows whatever the rows after it hold.
func RunEnd(qids *array.String, from int, id string) int {
	if from >= qids.Len() || qids.Value(from) != id {
		return from
	}
	off := qids.ValueOffsets()
	n, w := len(off)-1, int32(len(id))
	data, base := qids.ValueBytes(), off[0]
	end := from + 1 // rows [from,end) hold id
	for step := 8; end < n; step *= 2 {
		k := min(step, n-end)
		m := 0 // rows from end on of id's length
		for m < k && off[end+m+1]-off[end+m] == w {
			m++
		}
		lo := int(off[end] - base)
		hi := lo + m*len(id)
		if p := firstDiff(data[lo:hi], data[lo-len(id):hi-len(id)]); p < hi-lo {
			return end + p/len(id)
		}
		end += m
		if m < k {
			break
		}
	}
	return end
}

// firstDiff returns the index of the first byte where a and b (of a's
// length at least) differ, or len(a).
func firstDiff(a, b []byte) int {
	b = b[:len(a)]
	i := 0
	for ; i+8 <= len(a); i += 8 {
		if x := binary.LittleEndian.Uint64(a[i:]) ^ binary.LittleEndian.Uint64(b[i:]); x != 0 {
			return i + bits.TrailingZeros64(x)/8
		}
	}
	for ; i < len(a); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}
