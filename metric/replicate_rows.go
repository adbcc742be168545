package metric

import "encoding/binary"

// addReplicateRowsScalar is the scalar replicate loop: the default build's
// and the reference of the SIMD build's.
func addReplicateRowsScalar(acc, sub []int64, w []uint8, stride int) {
	for r := 0; r*blockQueries < len(w); r++ {
		x := binary.LittleEndian.Uint64(w[r*blockQueries:])
		s0 := sub[int(gather8(x&lowBits))*stride:][:stride]
		s1 := sub[int(gather8(x>>1&lowBits))*stride:][:stride]
		a := acc[r*stride:][:stride]
		for m := range a {
			a[m] += s0[m] + s1[m]<<1
		}
	}
}

// addPermutationRowsScalar is the scalar permutation loop.
func addPermutationRowsScalar(acc, sub []int64, t []uint8, stride int) {
	for r, s := range t {
		row := sub[int(s)*stride:][:stride]
		a := acc[r*stride:][:stride]
		for m := range a {
			a[m] += row[m]
		}
	}
}
