package conformance

import (
	"bufio"
	"context"
	"fmt"
	"math"
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

const dir = "testdata/trec_eval"

// expected is one line of trec_eval output.
type expected struct {
	measure, qid, value string
	line                int
}

func readExpected(t *testing.T, name string) []expected {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []expected
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		fs := strings.Split(sc.Text(), "\t")
		if len(fs) != 3 {
			t.Fatalf("%s:%d: want 3 tab-separated fields", name, n)
		}
		out = append(out, expected{strings.TrimSpace(fs[0]), fs[1], fs[2], n})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// memWriter collects per-query values.
type memWriter struct{ rows map[string][]float64 }

func (m *memWriter) Write(qid string, vals []float64) error {
	m.rows[qid] = append([]float64(nil), vals...)
	return nil
}
func (m *memWriter) Commit() error { return nil }
func (m *memWriter) Abort()        {}

type conformanceCase struct {
	name    string // expected output file
	qrels   string
	results string
	level   int32
	depth   int
	onlyRun bool // trec_eval without -c
	lines   int  // lines compared: every line of a measure evalgate has
	// bpref are the bpref lines among them (per query and all).
	bpref int
	// judgedLines are the unj_k lines compared with Judged@k (those
	// whose rankings have at least k documents).
	judgedLines int
}

var conformanceCases = []conformanceCase{
	{name: "out.test", qrels: "qrels.test", results: "results.test", level: 1, onlyRun: true, lines: 17, bpref: 1},
	{name: "out.test", qrels: "qrels.test.with-comments", results: "results.test", level: 1, onlyRun: true, lines: 17, bpref: 1},
	{name: "out.comment.test", qrels: "qrels.comment.test", results: "results.comment.test", level: 1, onlyRun: true, lines: 17, bpref: 1},
	{name: "out.test.a", qrels: "qrels.test", results: "results.test", level: 1, onlyRun: true, lines: 48, bpref: 1},
	{name: "out.test.aq", qrels: "qrels.test", results: "results.test", level: 1, onlyRun: true, lines: 189, bpref: 4, judgedLines: 12},
	{name: "out.test.aqc", qrels: "qrels.test", results: "results.trunc", level: 1, lines: 189, bpref: 4, judgedLines: 6},
	{name: "out.test.aqcM", qrels: "qrels.test", results: "results.trunc", level: 1, depth: 100, lines: 189, bpref: 4, judgedLines: 6},
	{name: "out.test.aql", qrels: "qrels.rel_level", results: "results.test", level: 2, onlyRun: true, lines: 189, bpref: 4, judgedLines: 12},
	{name: "out.test.meas_params", qrels: "qrels.test", results: "results.test", level: 1, onlyRun: true, lines: 44},
}

func TestConformance(t *testing.T) {
	for _, c := range conformanceCases {
		t.Run(c.name+"/"+c.qrels+"/"+c.results, func(t *testing.T) { runCase(t, c) })
	}
}

// measuresOf returns every measure of the expected output that evalgate
// also computes, and each trec_eval name's index among them (-1: not an
// evalgate measure: gm_bpref, iprec_at_recall, …).
func measuresOf(want []expected) ([]metric.Measure, map[string]int) {
	var measures []metric.Measure
	byName := map[string]int{}
	for _, e := range want {
		if _, ok := byName[e.measure]; ok {
			continue
		}
		m, err := metric.Parse(e.measure)
		if err != nil || m.TRECName() != e.measure {
			byName[e.measure] = -1
			continue
		}
		byName[e.measure] = len(measures)
		measures = append(measures, m)
	}
	return measures, byName
}

func runCase(t *testing.T, c conformanceCase) {
	want := readExpected(t, c.name)
	measures, byName := measuresOf(want)
	pq := &memWriter{rows: map[string][]float64{}}
	job := coordinator.Job{
		Gold:   coordinator.Input{Path: filepath.Join(dir, c.qrels)},
		Run:    coordinator.Input{Path: filepath.Join(dir, c.results)},
		Metric: metric.Config{Measures: measures, RelLevel: c.level},
		Ingest: ingest.Config{RelLevel: c.level, Depth: c.depth, OnlyRunQueries: c.onlyRun, Strict: true},
		PerQuery: func() (perquery.Writer, error) {
			return pq, nil
		},
	}
	out, err := coordinator.Score(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]float64{}
	for _, m := range out.Summary.Measures {
		all[m.TRECName] = m.Value
	}
	compared, bpref := 0, 0
	judged := checkJudged(t, c, want)
	for _, e := range want {
		idx := byName[e.measure]
		if idx < 0 {
			continue
		}
		var got float64
		if e.qid == "all" {
			got = all[e.measure]
		} else {
			row, ok := pq.rows[e.qid]
			if !ok {
				t.Errorf("%s:%d: query %s not scored", c.name, e.line, e.qid)
				continue
			}
			got = row[idx]
		}
		wantV, err := strconv.ParseFloat(e.value, 64)
		if err != nil {
			t.Fatalf("%s:%d: bad value %q", c.name, e.line, e.value)
		}
		// trec_eval prints %6.4f (integers for counts): evalgate's value,
		// printed the same way, must read the same.
		format := "%.4f"
		if !strings.Contains(e.value, ".") {
			format = "%.0f"
		}
		if fmt.Sprintf(format, got) != e.value {
			t.Errorf("%s:%d: %s for %s = %.6f, trec_eval %s", c.name, e.line, e.measure, e.qid, got, e.value)
		}
		_ = wantV
		compared++
		if e.measure == "bpref" {
			bpref++
		}
	}
	if compared != c.lines || judged != c.judgedLines || bpref != c.bpref {
		t.Fatalf("%s: compared %d lines, %d of them bpref, and %d Judged@k lines, want %d, %d and %d",
			c.name, compared, bpref, judged, c.lines, c.bpref, c.judgedLines)
	}
	t.Logf("%s: %d values agree with trec_eval (%d measures), and %d Judged@k values with 1 - unj", c.name, compared, len(measures), judged)
}

// checkJudged compares Judged@k with trec_eval's unj_k (the fraction of
// the top k that is unjudged, a missing rank counting as judged): Judged@k
// = 1 - unj_k wherever the ranking has at least k documents, which the
// expected output's own num_ret lines tell. It returns the lines compared.
func checkJudged(t *testing.T, c conformanceCase, want []expected) int {
	numRet := map[string]int{}
	var cutoffs []int
	for _, e := range want {
		if e.measure == "num_ret" && e.qid != "all" {
			numRet[e.qid], _ = strconv.Atoi(e.value)
		}
		if k, ok := strings.CutPrefix(e.measure, "unj_"); ok && e.qid == "all" {
			n, _ := strconv.Atoi(k)
			cutoffs = append(cutoffs, n)
		}
	}
	if len(cutoffs) == 0 {
		return 0
	}
	var names []string
	for _, k := range cutoffs {
		names = append(names, fmt.Sprintf("Judged@%d", k))
	}
	measures, err := metric.ParseList(names)
	if err != nil {
		t.Fatal(err)
	}
	pq := &memWriter{rows: map[string][]float64{}}
	out, err := coordinator.Score(context.Background(), coordinator.Job{
		Gold:     coordinator.Input{Path: filepath.Join(dir, c.qrels)},
		Run:      coordinator.Input{Path: filepath.Join(dir, c.results)},
		Metric:   metric.Config{Measures: measures, RelLevel: c.level},
		Ingest:   ingest.Config{RelLevel: c.level, Depth: c.depth, OnlyRunQueries: c.onlyRun, Strict: true},
		PerQuery: func() (perquery.Writer, error) { return pq, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	for _, e := range want {
		k, ok := strings.CutPrefix(e.measure, "unj_")
		if !ok {
			continue
		}
		cut, _ := strconv.Atoi(k)
		i := slices.Index(cutoffs, cut)
		var got float64
		if e.qid == "all" {
			full := len(numRet) > 0
			for _, n := range numRet {
				full = full && n >= cut
			}
			if !full {
				continue
			}
			got = out.Summary.Measures[i].Value
		} else {
			if numRet[e.qid] < cut {
				continue
			}
			got = pq.rows[e.qid][i]
		}
		unj, _ := strconv.ParseFloat(e.value, 64)
		if math.Abs(got-(1-unj)) > 0.5e-4+1e-12 {
			t.Errorf("%s:%d: Judged@%d for %s = %.6f, trec_eval unj_%d %s", c.name, e.line, cut, e.qid, got, cut, e.value)
		}
		compared++
	}
	return compared
}
