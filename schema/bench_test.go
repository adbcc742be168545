package schema

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchBlock is about 16 MB of TREC text shaped like the end-to-end
// benchmark's (gen's ranx setup): 100 results a query, descending scores.
func benchBlock(run bool) []byte {
	r := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	for q := 0; b.Len() < 16<<20; q++ {
		for rank := 1; rank <= 100; rank++ {
			doc := r.IntN(10_000_000)
			if run {
				fmt.Fprintf(&b, "q%07d Q0 d%08d %d %.6f evalgate\n", q, doc, rank, 1-float64(rank)/128)
			} else if rank <= 5 {
				fmt.Fprintf(&b, "q%07d 0 d%08d %d\n", q, doc, 1+r.IntN(5))
			}
		}
	}
	return b.Bytes()
}

// BenchmarkParseTRECRun measures the TREC run parser on one block, the
// unit the readers hand to each parsing goroutine (MB/s of text).
func BenchmarkParseTRECRun(b *testing.B) {
	data := benchBlock(true)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		res := parseTRECRunBlock("run.trec", data)
		if len(res.errs) > 0 {
			b.Fatal(res.errs[0])
		}
		res.rec.Release()
	}
}

// BenchmarkParseQrels measures the qrels parser on one block.
func BenchmarkParseQrels(b *testing.B) {
	data := benchBlock(false)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		res := parseQrelsBlock("gold.qrels", data)
		if len(res.errs) > 0 {
			b.Fatal(res.errs[0])
		}
		res.rec.Release()
	}
}
