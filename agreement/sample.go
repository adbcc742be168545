package agreement

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
)

// Judged is a (query, document) pair with its human grade.
type Judged struct {
	QueryID string
	DocID   string
	Grade   int
}

// Sample returns n of the pairs to grade again, stratified by grade (see
// the package documentation), sorted by query id and document id: all of
// them when n is at least their number, none when n is 0. A (query,
// document) pair given twice is an error, as is a negative n.
func Sample(pairs []Judged, n int, seed uint64) ([]Judged, error) {
	if n < 0 {
		return nil, fmt.Errorf("sample %d pairs: want a count ≥ 0", n)
	}
	sorted := slices.Clone(pairs)
	slices.SortFunc(sorted, comparePairs)
	for i := 1; i < len(sorted); i++ {
		if comparePairs(sorted[i-1], sorted[i]) == 0 {
			return nil, fmt.Errorf("sample %d pairs: query %q, document %q is given twice", n, sorted[i].QueryID, sorted[i].DocID)
		}
	}
	if n >= len(sorted) {
		return sorted, nil
	}
	strata := make(map[int][]Judged)
	for _, p := range sorted {
		strata[p.Grade] = append(strata[p.Grade], p)
	}
	sizes := make(map[int]int, len(strata))
	for g, s := range strata {
		sizes[g] = len(s)
	}
	var out []Judged
	for g, k := range allocate(sizes, n) {
		s := strata[g]
		keys := make([][32]byte, len(s))
		for i, p := range s {
			keys[i] = sampleKey(seed, p)
		}
		idx := make([]int, len(s))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int {
			if c := slices.Compare(keys[a][:], keys[b][:]); c != 0 {
				return c
			}
			return comparePairs(s[a], s[b]) // a hash collision: still a total order
		})
		for _, i := range idx[:k] {
			out = append(out, s[i])
		}
	}
	slices.SortFunc(out, comparePairs)
	return out, nil
}

func comparePairs(a, b Judged) int {
	if c := cmp.Compare(a.QueryID, b.QueryID); c != 0 {
		return c
	}
	return cmp.Compare(a.DocID, b.DocID)
}

// sampleKey is the SHA-256 of the seed (8 bytes, big-endian), the length of
// the query id (8 bytes, big-endian), the query id and the document id: a
// pseudo-random order of the pairs, fixed by the seed, that does not
// depend on the grade or on which other pairs there are.
func sampleKey(seed uint64, p Judged) [32]byte {
	h := sha256.New()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], seed)
	h.Write(b[:])
	binary.BigEndian.PutUint64(b[:], uint64(len(p.QueryID)))
	h.Write(b[:])
	h.Write([]byte(p.QueryID))
	h.Write([]byte(p.DocID))
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// allocate splits n (less than the total) among strata of the given
// sizes, all non-zero: proportionally to size, by largest remainders, with
// at least one for every stratum when n is at least the number of strata.
// When n is smaller, the n largest strata get one each (ties: lower
// grade first). Ties between equal remainders go to the lower grade.
func allocate(sizes map[int]int, n int) map[int]int {
	grades := make([]int, 0, len(sizes))
	total := 0
	for g, s := range sizes {
		grades = append(grades, g)
		total += s
	}
	slices.Sort(grades)
	out := make(map[int]int, len(sizes))
	if n < len(grades) {
		slices.SortStableFunc(grades, func(a, b int) int { return cmp.Compare(sizes[b], sizes[a]) })
		for _, g := range grades[:n] {
			out[g] = 1
		}
		return out
	}
	// The quota of grade g is n·size/total = out[g] + rem[g]/total.
	rem := make(map[int]int64, len(grades))
	given := 0
	for _, g := range grades {
		q := int64(n) * int64(sizes[g])
		out[g] = int(q / int64(total))
		if out[g] == 0 {
			out[g] = 1 // its share is under one pair: it gets one anyway
		}
		rem[g] = q - int64(out[g])*int64(total)
		given += out[g]
	}
	// Too few: add one to the largest remainders. Those are positive, so
	// no stratum gets more pairs than it has.
	byRem := slices.Clone(grades)
	slices.SortStableFunc(byRem, func(a, b int) int { return cmp.Compare(rem[b], rem[a]) })
	for i := 0; given < n; i++ {
		out[byRem[i]]++
		given++
	}
	// Too many (strata raised to one): take one back, in turn, from the
	// stratum most over its quota (smallest remainder) among those with
	// more than one.
	for given > n {
		pick, found := 0, false
		for _, g := range grades {
			if out[g] > 1 && (!found || rem[g] < rem[pick]) {
				pick, found = g, true
			}
		}
		out[pick]--
		rem[pick] += int64(total)
		given--
	}
	return out
}
