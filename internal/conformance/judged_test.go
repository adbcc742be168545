package conformance

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/perquery"
)

// trec_eval's test data has no expected output of -J. Its definition
// (form_res_rels.c) is the depth cut (-M) first, then every document
// without a judgment (not in the qrels, or there with a negative rel)
// leaves the ranking and the ranks close up. TestJudgedOnly checks
// evalgate's --judged-only against exactly that, done by hand on each
// case's files: the run is ranked as trec_eval ranks it, cut at the depth,
// and condensed into a new run file, which is scored without the option.
// Every value must be the same bits. And since bpref skips unjudged
// documents, trec_eval's bpref is the same with and without -J: evalgate's
// with --judged-only must read as the expected output's.
func TestJudgedOnly(t *testing.T) {
	for _, c := range conformanceCases {
		if c.qrels == "qrels.test.with-comments" {
			continue // the same judgments as qrels.test
		}
		t.Run(c.name+"/"+c.qrels+"/"+c.results, func(t *testing.T) { judgedOnlyCase(t, c) })
	}
}

func judgedOnlyCase(t *testing.T, c conformanceCase) {
	want := readExpected(t, c.name)
	measures, byName := measuresOf(want)
	condensed, dropped := condenseRun(t, c)
	got, gotAll, stats := scoreCase(t, c, filepath.Join(dir, c.results), c.depth, true, measures)
	ref, refAll, _ := scoreCase(t, c, condensed, 0, false, measures)
	if stats.UnjudgedDropped != dropped {
		t.Errorf("%d unjudged documents dropped, the condensed run lacks %d", stats.UnjudgedDropped, dropped)
	}
	if !slices.Equal(gotAll, refAll) {
		t.Errorf("--judged-only %v, the condensed run %v (%v)", gotAll, refAll, metric.Names(measures))
	}
	for qid, vals := range ref {
		if !slices.Equal(got[qid], vals) {
			t.Errorf("query %s: --judged-only %v, the condensed run %v", qid, got[qid], vals)
		}
	}
	if len(got) != len(ref) {
		t.Errorf("%d queries scored with --judged-only, %d on the condensed run", len(got), len(ref))
	}
	bpref := 0
	for _, e := range want {
		if e.measure != "bpref" {
			continue
		}
		v := gotAll[byName["bpref"]]
		if e.qid != "all" {
			v = got[e.qid][byName["bpref"]]
		}
		if s := fmt.Sprintf("%.4f", v); s != e.value {
			t.Errorf("%s:%d: bpref for %s with --judged-only = %s, trec_eval %s", c.name, e.line, e.qid, s, e.value)
		}
		bpref++
	}
	if bpref != c.bpref || dropped == 0 {
		t.Fatalf("%d bpref lines compared (want %d), %d unjudged documents dropped", bpref, c.bpref, dropped)
	}
	t.Logf("%s: %d measures agree with the condensed run on %d queries (%d unjudged documents dropped), %d bpref values with trec_eval",
		c.name, len(measures), len(ref), dropped, bpref)
}

// scoreCase scores a run of the case's qrels; it returns the per-query
// and overall values and the join's counts.
func scoreCase(t *testing.T, c conformanceCase, run string, depth int, judgedOnly bool, measures []metric.Measure) (map[string][]float64, []float64, ingest.Stats) {
	t.Helper()
	pq := &memWriter{rows: map[string][]float64{}}
	out, err := coordinator.Score(context.Background(), coordinator.Job{
		Gold:     coordinator.Input{Path: filepath.Join(dir, c.qrels)},
		Run:      coordinator.Input{Path: run},
		Metric:   metric.Config{Measures: measures, RelLevel: c.level, JudgedOnly: judgedOnly},
		Ingest:   ingest.Config{RelLevel: c.level, Depth: depth, OnlyRunQueries: c.onlyRun, Strict: true, JudgedOnly: judgedOnly},
		PerQuery: func() (perquery.Writer, error) { return pq, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	var all []float64
	for _, m := range out.Summary.Measures {
		all = append(all, m.Value)
	}
	return pq.rows, all, out.Stats
}

// runLine is one line of a TREC run, as trec_eval ranks it.
type runLine struct {
	qid, doc string
	score    float64
	text     string
}

// condenseRun writes the case's run as trec_eval -J scores it: each
// query's documents sorted by score descending, then docno descending
// (trec_eval's comp_sim_docno), cut at the case's depth, without the
// documents that have no judgment of 0 or more in the qrels. It returns
// the file and the number of documents left out after the depth cut (of
// the queries in the qrels: the others are not scored).
func condenseRun(t *testing.T, c conformanceCase) (string, int64) {
	t.Helper()
	judged := map[[2]string]bool{}
	inQrels := map[string]bool{}
	for _, f := range readFields(t, c.qrels) {
		if len(f) != 4 {
			t.Fatalf("%s: want 4 fields, got %q", c.qrels, f)
		}
		rel, err := strconv.Atoi(f[3])
		if err != nil {
			t.Fatalf("%s: %v", c.qrels, err)
		}
		judged[[2]string{f[0], f[2]}] = rel >= 0
		inQrels[f[0]] = true
	}
	byQuery := map[string][]runLine{}
	for _, f := range readFields(t, c.results) {
		score, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			t.Fatalf("%s: %v", c.results, err)
		}
		byQuery[f[0]] = append(byQuery[f[0]], runLine{qid: f[0], doc: f[2], score: score, text: strings.Join(f[:6], " ")})
	}
	var b strings.Builder
	dropped := int64(0)
	for _, qid := range slices.Sorted(maps.Keys(byQuery)) {
		lines := byQuery[qid]
		if !inQrels[qid] {
			continue // not scored: no judgments
		}
		slices.SortFunc(lines, func(a, b runLine) int {
			if a.score != b.score {
				return cmp.Compare(b.score, a.score)
			}
			return strings.Compare(b.doc, a.doc)
		})
		if c.depth > 0 && len(lines) > c.depth {
			lines = lines[:c.depth]
		}
		for _, l := range lines {
			if !judged[[2]string{qid, l.doc}] {
				dropped++
				continue
			}
			b.WriteString(l.text + "\n")
		}
	}
	p := filepath.Join(t.TempDir(), "condensed.trec")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, dropped
}

// readFields returns the whitespace-separated fields of each line of a
// test file.
func readFields(t *testing.T, name string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) > 0 {
			out = append(out, fs)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
