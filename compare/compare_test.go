package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/retrieval"
	"github.com/evalgate/evalgate/retriever"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/summary"
)

const testQueries = 60

// testData writes a gold set with query texts and, per spread, a run in
// which each query's first relevant document lands at a random position
// below spread (beyond the 10 retrieved when spread > 10): the larger
// the spread, the worse the run. Query q005 of every run has no hits.
func testData(t *testing.T, dir string, spreads map[string]int) (gold string, runs map[string]string) {
	t.Helper()
	var g strings.Builder
	for q := range testQueries {
		fmt.Fprintf(&g, `{"query_id":"q%03d","query":"what about %d","relevant_ids":["r%da","r%db"]}`+"\n", q, q, q, q)
	}
	gold = filepath.Join(dir, "gold.jsonl")
	writeFile(t, gold, g.String())
	runs = map[string]string{}
	for name, spread := range spreads {
		r := rand.New(rand.NewPCG(uint64(spread), 11))
		var b strings.Builder
		for q := range testQueries {
			docs := []string{}
			if q != 5 {
				for i := range 10 {
					docs = append(docs, fmt.Sprintf("n%d_%d", q, i))
				}
				if p := r.IntN(spread); p < 10 {
					docs[p] = fmt.Sprintf("r%da", q)
				}
				if p := r.IntN(spread); p < 10 && !strings.HasPrefix(docs[p], "r") {
					docs[p] = fmt.Sprintf("r%db", q)
				}
			}
			line, _ := json.Marshal(map[string]any{"query_id": fmt.Sprintf("q%03d", q), "retrieved_ids": docs})
			b.Write(append(line, '\n'))
		}
		runs[name] = filepath.Join(dir, name+".jsonl")
		writeFile(t, runs[name], b.String())
	}
	return gold, runs
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// search answers a run file's rankings over HTTP: asked for a query's
// text (?q=), the run's documents of that query in list order, with
// scores that would order them the other way round (the ranking is the
// list order). Texts in fail get HTTP 500.
type search struct {
	byText   map[string][]string
	fail     map[string]bool
	requests atomic.Int64
}

func newSearch(t *testing.T, run string) *search {
	t.Helper()
	s := &search{byText: map[string][]string{}, fail: map[string]bool{}}
	data, err := os.ReadFile(run)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct {
			ID   string   `json:"query_id"`
			Docs []string `json:"retrieved_ids"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		var q int
		fmt.Sscanf(r.ID, "q%d", &q)
		s.byText[fmt.Sprintf("what about %d", q)] = r.Docs
	}
	return s
}

func (s *search) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	q := r.URL.Query().Get("q")
	if s.fail[q] {
		http.Error(w, "shard unavailable", http.StatusInternalServerError)
		return
	}
	hits := []map[string]any{}
	for i, id := range s.byText[q] {
		hits = append(hits, map[string]any{"id": id, "score": i})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"hits": hits})
}

// serve starts the search and returns a retriever asking it.
func serve(t *testing.T, s *search, extra string, failures retrieval.Budget) *coordinator.Retriever {
	t.Helper()
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	file := filepath.Join(t.TempDir(), "search.yaml")
	writeFile(t, file, fmt.Sprintf("url: %s/search?q={{.Query | urlquery}}\nresults: hits\nid: id\nscore: score\nk: 10\nretries: 0\n%s", ts.URL, extra))
	cfg, err := retriever.Load(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &coordinator.Retriever{Config: cfg, Failures: failures}
}

func newTest(t *testing.T, gold string, systems ...System) Test {
	t.Helper()
	ms, err := metric.ParseList([]string{"R@5,RR,nDCG@10,AP,NumQ"})
	if err != nil {
		t.Fatal(err)
	}
	return Test{
		Systems: systems,
		Job: coordinator.Job{
			Gold:   coordinator.Input{Path: gold},
			Metric: metric.Config{Measures: ms, RelLevel: 1},
			Ingest: ingest.Config{RelLevel: 1},
			Logger: zerolog.New(zerolog.NewTestWriter(t)),
		},
		Pairing: metric.Pairing{Replicates: 200, Permutations: 500, Seed: 1, TopK: 5},
	}
}

func runSystem(name, path string) System {
	return System{Name: name, Run: coordinator.Input{Path: path}}
}

// scored is a summary's JSON without what names or times its inputs:
// what two evaluations of the same rankings share.
func scored(t *testing.T, s *summary.Summary) string {
	t.Helper()
	c := *s.Comparable()
	c.Inputs.Run, c.Retrieval = summary.Input{Digest: c.Inputs.Run.Digest}, nil
	if c.Baseline != nil {
		b := *c.Baseline
		b.Input, b.Retrieval = summary.Input{Digest: b.Input.Digest}, nil
		c.Baseline = &b
	}
	var buf bytes.Buffer
	if err := c.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// A retriever compares as the run file of its rankings would, as a
// candidate and as the reference, bit for bit; the summaries name the
// retriever file and keep its latencies; the retrieved runs are removed.
func TestRetrieverComparesAsItsRun(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	gold, runs := testData(t, dir, map[string]int{"a": 3, "b": 4, "c": 30})
	srvB := newSearch(t, runs["b"])
	b := serve(t, srvB, "", retrieval.Budget{})
	ctx := context.Background()

	got, err := Run(ctx, newTest(t, gold, runSystem("a", runs["a"]), System{Name: "b-live", Retriever: b},
		runSystem("b", runs["b"]), runSystem("c", runs["c"])))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("%d comparisons for 4 systems", len(got))
	}
	if live, file := scored(t, got[0]), scored(t, got[1]); live != file {
		t.Fatalf("the retriever compares differently from its run file:\n%s\nwant\n%s", live, file)
	}
	if in := got[0].Inputs.Run; in.Path != b.Config.File || in.Format != coordinator.FormatRetriever {
		t.Fatalf("the retriever's summary names %+v", in)
	}
	r := got[0].Retrieval
	if r == nil || r.Queries != testQueries || r.Answered != testQueries || r.Empty != 1 || r.Latency.P50 <= 0 {
		t.Fatalf("retrieval section %+v", r)
	}
	if n := srvB.requests.Load(); n != testQueries+2 { // and two probes: compare's and the job's
		t.Fatalf("%d requests for %d queries", n, testQueries)
	}
	if got[1].Retrieval != nil || got[2].Baseline.Retrieval != nil {
		t.Fatal("a run file has a retrieval section")
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Fatalf("left in the temporary directory: %v", left)
	}

	// The same retriever as the reference.
	asRef, err := Run(ctx, newTest(t, gold, System{Name: "b-live", Retriever: b}, runSystem("c", runs["c"])))
	if err != nil {
		t.Fatal(err)
	}
	files, err := Run(ctx, newTest(t, gold, runSystem("b", runs["b"]), runSystem("c", runs["c"])))
	if err != nil {
		t.Fatal(err)
	}
	if live, file := scored(t, asRef[0]), scored(t, files[0]); live != file {
		t.Fatalf("the retriever as reference compares differently from its run file:\n%s\nwant\n%s", live, file)
	}
	if in := asRef[0].Baseline.Input; in.Path != b.Config.File || asRef[0].Baseline.Retrieval == nil {
		t.Fatalf("the reference retriever's baseline: %+v", asRef[0].Baseline)
	}
	if asRef[0].Comparison.HolmComparisons != 0 || asRef[0].Comparison.Measures[0].PValueHolm != nil {
		t.Fatal("one comparison adjusted")
	}
}

// A query the retriever fails within --max-failed-queries is missing from
// its run: it compares as the run file without that query.
func TestRetrieverFailuresAreMissing(t *testing.T) {
	dir := t.TempDir()
	gold, runs := testData(t, dir, map[string]int{"a": 3, "b": 4})
	srv := newSearch(t, runs["b"])
	srv.fail["what about 7"] = true
	b := serve(t, srv, "", retrieval.Budget{Count: 1})
	lines := strings.SplitAfter(string(must(os.ReadFile(runs["b"]))), "\n")
	without := filepath.Join(dir, "b-without-7.jsonl")
	writeFile(t, without, strings.Join(append(lines[:7:7], lines[8:]...), ""))

	ctx := context.Background()
	got, err := Run(ctx, newTest(t, gold, runSystem("a", runs["a"]), System{Name: "b", Retriever: b}))
	if err != nil {
		t.Fatal(err)
	}
	want, err := Run(ctx, newTest(t, gold, runSystem("a", runs["a"]), runSystem("b", without)))
	if err != nil {
		t.Fatal(err)
	}
	if g, w := scored(t, got[0]), scored(t, want[0]); g != w {
		t.Fatalf("with a failed query:\n%s\nwant\n%s", g, w)
	}
	if r := got[0].Retrieval; r.Failed != 1 || len(r.FailedQueries) != 1 || r.FailedQueries[0].QueryID != "q007" {
		t.Fatalf("retrieval section %+v", r)
	}

	// Over the budget: the test fails, naming the query.
	b.Failures = retrieval.Budget{}
	if _, err := Run(ctx, newTest(t, gold, runSystem("a", runs["a"]), System{Name: "b", Retriever: b})); err == nil ||
		!strings.Contains(err.Error(), `"q007"`) {
		t.Fatalf("a failure over the budget: %v", err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Every retriever is probed before any is asked for the gold queries: a
// retriever file that does not fit its answers stops the test with bad
// input naming the file, and the retriever before it was asked only its
// probe.
func TestProbeBeforeAnySystem(t *testing.T) {
	dir := t.TempDir()
	gold, runs := testData(t, dir, map[string]int{"a": 3, "b": 4})
	good := newSearch(t, runs["a"])
	a := serve(t, good, "", retrieval.Budget{})
	bad := serve(t, newSearch(t, runs["b"]), "", retrieval.Budget{})
	cfg, err := retriever.Parse(bad.Config.File, bytes.Replace(bad.Config.Source, []byte("results: hits"), []byte("results: matches"), 1), nil)
	if err != nil {
		t.Fatal(err)
	}
	bad.Config = cfg
	_, err = Run(context.Background(), newTest(t, gold, System{Name: "a", Retriever: a}, runSystem("b", runs["b"]), System{Name: "bad", Retriever: bad}))
	if !schema.IsInvalidInput(err) || !strings.Contains(err.Error(), bad.Config.File+":2: field \"results\"") {
		t.Fatalf("a retriever whose answers have no hits at results: %v", err)
	}
	if n := good.requests.Load(); n != 1 {
		t.Fatalf("the first retriever got %d requests before the last one's probe failed, want its probe only", n)
	}
}

// AdjustHolm against p-values adjusted by hand, the raw ones kept.
func TestAdjustHolm(t *testing.T) {
	p := func(x float64) *float64 { return &x }
	cmp := func(ps ...*float64) *summary.Summary {
		s := &summary.Summary{Comparison: &summary.Comparison{}}
		for i, x := range ps {
			s.Comparison.Measures = append(s.Comparison.Measures, summary.MeasureComparison{Name: fmt.Sprint("m", i), PValue: x})
		}
		s.Comparison.Groups = []summary.GroupComparison{{Tag: "t", Value: "v", Measures: []summary.MeasureComparison{{Name: "m0", PValue: ps[0]}}}}
		return s
	}
	// m0: 0.01, 0.04, 0.03 → sorted 0.01, 0.03, 0.04: 0.03, max(0.03, 2·0.03) = 0.06,
	// max(0.06, 0.04) = 0.06. m1: 0.5, none, 0.25 → a family of two: 0.5, 0.5.
	cs := []*summary.Summary{cmp(p(0.01), p(0.5)), cmp(p(0.04), nil), cmp(p(0.03), p(0.25))}
	AdjustHolm(cs)
	want := [][]*float64{{p(0.03), p(0.5)}, {p(0.06), nil}, {p(0.06), p(0.5)}}
	raw := [][]*float64{{p(0.01), p(0.5)}, {p(0.04), nil}, {p(0.03), p(0.25)}}
	for i, s := range cs {
		if s.Comparison.HolmComparisons != 3 {
			t.Errorf("comparison %d: %d comparisons", i, s.Comparison.HolmComparisons)
		}
		for j, mc := range s.Comparison.Measures {
			if !equalP(mc.PValueHolm, want[i][j]) || !equalP(mc.PValue, raw[i][j]) {
				t.Errorf("comparison %d, m%d: p %v, Holm %v; want %v, %v", i, j, deref(mc.PValue), deref(mc.PValueHolm), deref(raw[i][j]), deref(want[i][j]))
			}
		}
		if g := s.Comparison.Groups[0].Measures[0]; !equalP(g.PValueHolm, want[i][0]) {
			t.Errorf("comparison %d, group: Holm %v, want %v", i, deref(g.PValueHolm), deref(want[i][0]))
		}
	}
	one := []*summary.Summary{cmp(p(0.01), p(0.5))}
	AdjustHolm(one)
	if one[0].Comparison.HolmComparisons != 0 || one[0].Comparison.Measures[0].PValueHolm != nil {
		t.Error("a single comparison adjusted")
	}
}

func equalP(a, b *float64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }

func deref(x *float64) any {
	if x == nil {
		return nil
	}
	return *x
}
