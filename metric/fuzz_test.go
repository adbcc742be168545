package metric

import (
	"strings"
	"testing"

	"github.com/evalgate/evalgate/internal/exact"
)

// FuzzParse: any string either parses to a measure whose canonical name
// parses back to the same measure, or fails with the list of known names.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"R@5", "ndcg_cut.10", "retrieval_recall_at_5", "nDCG(gain=exp)@10", "map", "bpref", "P(", "@", "_at_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := Parse(s)
		if err != nil {
			if !strings.Contains(err.Error(), "known measures") {
				t.Fatalf("error without the known names: %v", err)
			}
			return
		}
		back, err := Parse(m.String())
		if err != nil || back != m {
			t.Fatalf("%q -> %v -> %v, %v", s, m, back, err)
		}
	})
}

// FuzzShardResult: decoding never panics; what decodes re-encodes to the
// same bytes and merges without error.
func FuzzShardResult(f *testing.F) {
	ms, _ := ParseList([]string{"RR,R@5"})
	p := NewPartial(ms)
	g := p.Group(Overall)
	g.Queries = 2
	_ = g.Sums[0].Add(0.5)
	_ = g.Sums[1].Add(1)
	good, _ := (&ShardResult{Partial: p}).MarshalBinary()
	withRows, _ := (&ShardResult{Partial: p, PerQuery: &PerQueryRows{Seq: []int64{0, 1}, QueryID: []string{"a", "b"}, Values: []float64{1, 0, 0, 1}}}).MarshalBinary()
	f.Add(good)
	f.Add(withRows)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r ShardResult
		if err := r.UnmarshalBinary(b); err != nil {
			return
		}
		again, err := r.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var r2 ShardResult
		if err := r2.UnmarshalBinary(again); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		total := NewPartial(r.Partial.Measures())
		var scratch exact.Sum
		if _, err := MergeShardResult(total, again, &scratch); err != nil {
			t.Fatalf("merge of a valid result: %v", err)
		}
	})
}
