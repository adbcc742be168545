package ingest

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// A ranking comes back from its compact form as the same ids: rankings
// as the Ranker makes them (unjudged ids G, G+1, … in order, judged ids
// anywhere), with none or only judged or only unjudged documents, and
// rankings of any other shape, which are kept whole.
func TestRankingRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shaped := func(nJudged uint32, n int) []uint32 {
		ids := make([]uint32, 0, n)
		perm := rng.Perm(int(nJudged))
		next := nJudged
		for len(ids) < n {
			if len(perm) > 0 && rng.IntN(4) == 0 {
				ids = append(ids, uint32(perm[0]))
				perm = perm[1:]
				continue
			}
			ids = append(ids, next)
			next++
		}
		return ids
	}
	cases := []struct {
		name    string
		nJudged uint32
		ids     []uint32
		whole   bool
	}{
		{"judged only", 3, []uint32{2, 0, 1}, false},
		{"unjudged only", 5, []uint32{5, 6, 7, 8}, false},
		{"no judgments", 0, []uint32{0, 1, 2}, false},
		{"judged last", 2, []uint32{2, 3, 4, 1}, false},
		{"one", 1, []uint32{0}, false},
		{"unjudged out of order", 2, []uint32{3, 2, 0}, true},
		{"unjudged gap", 2, []uint32{2, 4}, true},
		{"large ids", 1, []uint32{1 << 31, 0, 1<<32 - 1}, true},
	}
	for i := range 200 {
		nJudged := uint32(rng.IntN(30))
		cases = append(cases, struct {
			name    string
			nJudged uint32
			ids     []uint32
			whole   bool
		}{"random shaped", nJudged, shaped(nJudged, 1+rng.IntN(300)), false})
		if i%4 == 0 {
			ids := shaped(nJudged, 2+rng.IntN(300))
			j := rng.IntN(len(ids) - 1)
			ids[j], ids[j+1] = ids[j+1], ids[j]
			cases = append(cases, struct {
				name    string
				nJudged uint32
				ids     []uint32
				whole   bool
			}{"random swapped", nJudged, ids, ids[j] >= nJudged && ids[j+1] >= nJudged})
		}
	}
	var data []byte
	var at []int
	for _, c := range cases {
		at = append(at, len(data))
		data = encodeRanking(data, c.ids, c.nJudged)
		if whole := data[at[len(at)-1]]&1 == 1; whole != c.whole {
			t.Fatalf("%s %v: kept whole %v, want %v", c.name, c.ids, whole, c.whole)
		}
	}
	prefix := []uint32{7, 7}
	for i, c := range cases {
		got := decodeRanking(slices.Clone(prefix), data[at[i]:], c.nJudged)
		if !slices.Equal(got[:2], prefix) || !slices.Equal(got[2:], c.ids) {
			t.Fatalf("%s: %v came back as %v", c.name, c.ids, got[2:])
		}
	}
	if shapedSize, wholeSize := len(encodeRanking(nil, shaped(5, 100), 5)), len(encodeRanking(nil, []uint32{6, 5}, 5)); shapedSize > 16 || wholeSize != 3 {
		t.Fatalf("compact form of 100 ids with 5 judged takes %d bytes, of 2 ids kept whole %d", shapedSize, wholeSize)
	}
}
