package metric

import "encoding/binary"

// addReplicateRowsScalar is the scalar replicate loop: the default build's
// and the reference of the SIMD build's. For each replicate r it adds
// sub[bit 0 of the weights] + 2·sub[bit 1 of the weights] to acc[r]
// (rows of vecs vectors; w[r·8+j] is query j's weight in replicate r).
func addReplicateRowsScalar(acc, sub []vec4, w []uint8, vecs int) {
	if vecs == 4 {
		addReplicateRows4(acc, sub, w)
		return
	}
	for r := 0; r*blockQueries < len(w); r++ {
		x := binary.LittleEndian.Uint64(w[r*blockQueries:])
		s0 := sub[int(gather8(x&lowBits))*vecs:][:vecs]
		s1 := sub[int(gather8(x>>1&lowBits))*vecs:][:vecs]
		a := acc[r*vecs:][:vecs]
		for m := range a {
			a[m][0] += s0[m][0] + s1[m][0]<<1
			a[m][1] += s0[m][1] + s1[m][1]<<1
			a[m][2] += s0[m][2] + s1[m][2]<<1
			a[m][3] += s0[m][3] + s1[m][3]<<1
		}
	}
}

// addPermutationRowsScalar is the scalar permutation loop: it adds
// sub[t[r]] to acc[r] for each permutation r.
func addPermutationRowsScalar(acc, sub []vec4, t []uint8, vecs int) {
	if vecs == 4 {
		addPermutationRows4(acc, sub, t)
		return
	}
	for r, s := range t {
		row := sub[int(s)*vecs:][:vecs]
		a := acc[r*vecs:][:vecs]
		for m := range a {
			a[m][0] += row[m][0]
			a[m][1] += row[m][1]
			a[m][2] += row[m][2]
			a[m][3] += row[m][3]
		}
	}
}

// addReplicateRows4 is addReplicateRowsScalar for rows of 4 vectors (13
// to 16 paired measures, as with the 14 default measures), unrolled.
func addReplicateRows4(acc, sub []vec4, w []uint8) {
	for r := 0; r*blockQueries < len(w); r++ {
		x := binary.LittleEndian.Uint64(w[r*blockQueries:])
		s0 := (*[4]vec4)(sub[int(gather8(x&lowBits))*4:])
		s1 := (*[4]vec4)(sub[int(gather8(x>>1&lowBits))*4:])
		a := (*[4]vec4)(acc[r*4:])
		a[0][0] += s0[0][0] + s1[0][0]<<1
		a[0][1] += s0[0][1] + s1[0][1]<<1
		a[0][2] += s0[0][2] + s1[0][2]<<1
		a[0][3] += s0[0][3] + s1[0][3]<<1
		a[1][0] += s0[1][0] + s1[1][0]<<1
		a[1][1] += s0[1][1] + s1[1][1]<<1
		a[1][2] += s0[1][2] + s1[1][2]<<1
		a[1][3] += s0[1][3] + s1[1][3]<<1
		a[2][0] += s0[2][0] + s1[2][0]<<1
		a[2][1] += s0[2][1] + s1[2][1]<<1
		a[2][2] += s0[2][2] + s1[2][2]<<1
		a[2][3] += s0[2][3] + s1[2][3]<<1
		a[3][0] += s0[3][0] + s1[3][0]<<1
		a[3][1] += s0[3][1] + s1[3][1]<<1
		a[3][2] += s0[3][2] + s1[3][2]<<1
		a[3][3] += s0[3][3] + s1[3][3]<<1
	}
}

// addPermutationRows4 is addPermutationRowsScalar for rows of 4 vectors.
func addPermutationRows4(acc, sub []vec4, t []uint8) {
	for r, s := range t {
		row := (*[4]vec4)(sub[int(s)*4:])
		a := (*[4]vec4)(acc[r*4:])
		a[0][0] += row[0][0]
		a[0][1] += row[0][1]
		a[0][2] += row[0][2]
		a[0][3] += row[0][3]
		a[1][0] += row[1][0]
		a[1][1] += row[1][1]
		a[1][2] += row[1][2]
		a[1][3] += row[1][3]
		a[2][0] += row[2][0]
		a[2][1] += row[2][1]
		a[2][2] += row[2][2]
		a[2][3] += row[2][3]
		a[3][0] += row[3][0]
		a[3][1] += row[3][1]
		a[3][2] += row[3][2]
		a[3][3] += row[3][3]
	}
}
