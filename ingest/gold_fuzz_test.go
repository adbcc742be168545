package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goldSummary renders everything a Gold holds, in gold order.
func goldSummary(g *Gold) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %d %d\n", g.Digest(), g.Judgments, g.IdenticalDuplicates)
	for i := int32(0); i < int32(g.NumQueries()); i++ {
		fmt.Fprintf(&b, "%q %d %v", g.QueryID(i), g.Lookup(g.QueryID(i)), g.Grades(i))
		for j := range g.Grades(i) {
			fmt.Fprintf(&b, " %q", g.Doc(i, j))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// FuzzLoadGold checks that a gold set loads the same, errors included, on
// one core and on several.
func FuzzLoadGold(f *testing.F) {
	f.Add("q1 0 d1 1\nq1 0 d2 0\nq2 0 d1 3\n")
	f.Add("q1 0 d1 1\nq2 0 d1 1\nq1 0 d1 1\nq1 0 d1 2\nq2 0 d9 2\n")
	f.Add(strings.Repeat("a 0 x 1\nb 0 y 2\na 0 y 1\n", 50) + "a 0 x 3\n")
	f.Add("q 0 d 1\nbad line\nq 0 d x\n")
	p := filepath.Join(f.TempDir(), "gold.qrels")
	defer func(m int64) { minPartJudgments = m }(minPartJudgments)
	minPartJudgments = 2 // many ranges of queries even in small inputs
	f.Fuzz(func(t *testing.T, text string) {
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		var out [2]string
		for k, procs := range []int{1, 3} {
			g, err := loadGoldProcs(t, p, procs)
			if err != nil {
				out[k] = "error: " + err.Error()
			} else {
				out[k] = goldSummary(g)
			}
		}
		if out[0] != out[1] {
			t.Fatalf("one core:\n%s\nthree:\n%s", out[0], out[1])
		}
	})
}
