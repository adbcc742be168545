package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/evalgate/evalgate/summary"
)

// writeTextGold writes the gold set of writeRun's runs with query texts
// ("text 17" for q017), which a retriever is asked for.
func writeTextGold(t *testing.T, dir string) string {
	var b strings.Builder
	for q := range 100 {
		fmt.Fprintf(&b, `{"query_id":"q%03d","query":"text %d","relevant_ids":["rel"]}`+"\n", q, q)
	}
	return write(t, dir, "gold.jsonl", b.String())
}

// runServer answers a TREC run file's rankings over HTTP, as a search
// service would: asked for a query's text (?q=text 17), the run's
// documents of q017 in the file's order (writeRun lists them best first),
// as {"hits": [{"id": …}]}. Texts in fail get HTTP 500.
type runServer struct {
	byText   map[string][]string
	fail     map[string]bool
	requests atomic.Int64
}

func newRunServer(t *testing.T, run string) *runServer {
	t.Helper()
	f, err := os.Open(run)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := &runServer{byText: map[string][]string{}, fail: map[string]bool{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var q int
		var doc string
		if _, err := fmt.Sscanf(sc.Text(), "q%d Q0 %s", &q, &doc); err != nil {
			t.Fatal(err)
		}
		text := fmt.Sprint("text ", q)
		s.byText[text] = append(s.byText[text], doc)
	}
	return s
}

func (s *runServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	q := r.URL.Query().Get("q")
	if s.fail[q] {
		http.Error(w, "index unavailable", http.StatusInternalServerError)
		return
	}
	hits := []map[string]string{}
	for _, id := range s.byText[q] {
		hits = append(hits, map[string]string{"id": id})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"hits": hits})
}

// serveRun starts a runServer for run and writes a retriever file named
// name asking it.
func serveRun(t *testing.T, dir, name, run, extra string) (*runServer, string) {
	t.Helper()
	s := newRunServer(t, run)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, write(t, dir, name, fmt.Sprintf("url: %s/search?q={{.Query | urlquery}}\nresults: hits\nid: id\nretries: 0\n%s", ts.URL, extra))
}

func readComparisons(t *testing.T, out string) []summary.Summary {
	t.Helper()
	var ss []summary.Summary
	if err := json.Unmarshal([]byte(out), &ss); err != nil {
		t.Fatalf("compare --format json: %v\n%s", err, out)
	}
	return ss
}

// columns returns the table's header cells: the column names.
func columns(out string) []string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "measure ") {
			return strings.Fields(line)
		}
	}
	return nil
}

// Two runs and a retriever serving the rankings of one of them: the
// retriever's column equals that run's, value for value; the p-values are
// Holm-adjusted over the three comparisons (raw ones kept in the JSON);
// the systems are taken in command-line order, --run and --retriever
// mixed; latency and failed queries are shown per system; and the
// retrieved run is not left behind.
func TestCompareRunsAndRetriever(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := t.TempDir()
	gold := writeTextGold(t, dir)
	vector := writeRun(t, dir, "vector.trec", 80, 7) // MRR 0.8233
	hybrid := writeRun(t, dir, "hybrid.trec", 60, 10)
	bm25 := writeRun(t, dir, "bm25.trec", 79, 8)
	srv, live := serveRun(t, dir, "hybrid-live.yaml", hybrid, "")
	stats := []string{"--bootstrap", "200", "--permutations", "200"}

	args := append([]string{"compare", "--gold", gold, "-m", "R@5,RR", "--run", vector, "--retriever", live, "--run", hybrid, "--run", bm25}, stats...)
	code, out, errs := evalgate(t, append(args, "--format", "json")...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	ss := readComparisons(t, out)
	if len(ss) != 3 {
		t.Fatalf("%d comparisons for 4 systems", len(ss))
	}
	liveS, fileS, bm25S := ss[0], ss[1], ss[2]
	if liveS.Inputs.Run.Path != live || liveS.Inputs.Run.Format != "retriever" || fileS.Inputs.Run.Path != hybrid || bm25S.Inputs.Run.Path != bm25 {
		t.Fatalf("comparisons out of command-line order: %s, %s, %s", liveS.Inputs.Run.Path, fileS.Inputs.Run.Path, bm25S.Inputs.Run.Path)
	}
	for _, s := range ss {
		if s.Baseline.Input.Path != vector {
			t.Fatalf("reference %s, want the first --run", s.Baseline.Input.Path)
		}
	}
	if !jsonEqual(t, liveS.Measures, fileS.Measures) || !jsonEqual(t, liveS.Comparison, fileS.Comparison) ||
		liveS.Inputs.Run.Digest != fileS.Inputs.Run.Digest || !jsonEqual(t, liveS.Counts, fileS.Counts) {
		t.Fatalf("the retriever's values differ from the run file it serves:\n%+v\n%+v", liveS.Comparison, fileS.Comparison)
	}
	r := liveS.Retrieval
	if r == nil || r.Answered != 100 || r.Failed != 0 || r.Latency.P50 <= 0 || fileS.Retrieval != nil {
		t.Fatalf("retrieval sections: %+v, run file's %+v", r, fileS.Retrieval)
	}
	if n := srv.requests.Load(); n != 100+2 { // every query, compare's probe and the job's
		t.Fatalf("the retriever got %d requests for 100 queries", n)
	}

	// Holm over k = 3 on RR: hybrid (twice, live and file) is far below
	// the reference, p at the test's floor 1/201; bm25 is close to it. Sorted
	// p_h = p_h ≤ p_b: adjusted min(1, 3·p_h), max(3·p_h, min(1, 2·p_h)) =
	// 3·p_h, and max(3·p_h, p_b).
	ph, pb := *liveS.Comparison.Measure("RR").PValue, *bm25S.Comparison.Measure("RR").PValue
	if ph != 1.0/201 || pb < 0.1 {
		t.Fatalf("raw p-values %v and %v: the data no longer gives the order this test works out", ph, pb)
	}
	for i, want := range []float64{3 * ph, 3 * ph, max(3*ph, pb)} {
		c := ss[i].Comparison
		if got := c.Measure("RR").PValueHolm; c.HolmComparisons != 3 || got == nil || *got != want {
			t.Errorf("comparison %d: %d comparisons, Holm p %v, want %v", i, c.HolmComparisons, got, want)
		}
	}

	// The table: columns in command-line order, Holm's p in the header,
	// the retriever's row values those of the run it serves, latency and
	// failed queries per system.
	code, out, errs = evalgate(t, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	cols := strings.Join(columns(out), " ")
	if !strings.HasPrefix(cols, "measure vector hybrid-live Δ 95% CI p (Holm, 3 comparisons) hybrid Δ") || !strings.Contains(cols, " bm25 Δ") {
		t.Fatalf("columns %q\n%s", cols, out)
	}
	var rr, p50, failed []string
	for _, line := range strings.Split(out, "\n") {
		switch f := strings.Fields(line); {
		case len(f) > 0 && f[0] == "RR":
			rr = f
		case strings.HasPrefix(line, "latency p50 (ms)"):
			p50 = f[3:]
		case strings.HasPrefix(line, "failed queries"):
			failed = f[2:]
		}
	}
	// RR vector | live Δ [lo, hi] p | hybrid Δ [lo, hi] p | bm25 …
	if len(rr) != 17 || strings.Join(rr[2:7], " ") != strings.Join(rr[7:12], " ") || rr[6] != summary.FormatP(3*ph) {
		t.Fatalf("RR row %q\n%s", rr, out)
	}
	if len(p50) != 4 || p50[0] != "–" || p50[1] == "–" || p50[2] != "–" || p50[3] != "–" {
		t.Fatalf("latency p50 row %q\n%s", p50, out)
	}
	if strings.Join(failed, " ") != "– 0 – –" || !strings.Contains(out, "retrievers:\n  hybrid-live: "+live+", 100 queries answered") {
		t.Fatalf("failed queries row %q\n%s", failed, out)
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Fatalf("left in the temporary directory: %v", left)
	}

	// The retriever first: the reference.
	code, out, errs = evalgate(t, append([]string{"compare", "--gold", gold, "-m", "RR", "--retriever", live, "--run", vector, "--format", "json"}, stats...)...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	ss = readComparisons(t, out)
	if b := ss[0].Baseline; len(ss) != 1 || b.Input.Path != live || b.Retrieval == nil || ss[0].Inputs.Run.Path != vector ||
		ss[0].Comparison.HolmComparisons != 0 || ss[0].Comparison.Measures[0].PValueHolm != nil {
		t.Fatalf("retriever as the reference: %s", out)
	}
}

func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	x, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(x) == string(y)
}

// A query a retriever fails within --max-failed-queries scores 0 and is
// named; one more than allowed fails compare.
func TestCompareRetrieverFailures(t *testing.T) {
	dir := t.TempDir()
	gold := writeTextGold(t, dir)
	vector := writeRun(t, dir, "vector.trec", 80, 7)
	srv, live := serveRun(t, dir, "hybrid.yaml", writeRun(t, dir, "hybrid.trec", 60, 10), "")
	srv.fail["text 7"] = true
	args := []string{"compare", "--gold", gold, "-m", "RR", "--run", vector, "--retriever", live, "--bootstrap", "50", "--permutations", "50"}
	code, out, errs := evalgate(t, append(args, "--max-failed-queries", "1")...)
	if code != 0 || !strings.Contains(out, "failed (scores 0): q007: ") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	var failed string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "failed queries") {
			failed = strings.Join(strings.Fields(line)[2:], " ")
		}
	}
	if failed != "– 1" {
		t.Fatalf("failed queries row %q\n%s", failed, out)
	}
	code, out, errs = evalgate(t, args...)
	if code == 0 || out != "" || !strings.Contains(errs, `"q007"`) {
		t.Fatalf("a failure over the budget: exit %d\n%s\n%s", code, out, errs)
	}
}

// Bad input stops compare with exit code 2, naming the file (and line),
// before any system is scored: a retriever file that does not parse, an
// unset ${VAR}, a retriever whose answers do not fit its file (found by
// the probe), a gold set without query texts; and the usage mistakes.
func TestCompareBadInputExitsTwo(t *testing.T) {
	dir := t.TempDir()
	gold, noText := writeTextGold(t, dir), writeGold(t, dir)
	vector := writeRun(t, dir, "vector.trec", 80, 7)
	srv, live := serveRun(t, dir, "live.yaml", vector, "")
	_, typo := serveRun(t, dir, "typo.yaml", vector, "reslts: hits\n")
	_, secret := serveRun(t, dir, "secret.yaml", vector, "headers:\n  Authorization: \"Bearer ${EVALGATE_TEST_UNSET_TOKEN}\"\n")
	_, misfit := serveRun(t, dir, "misfit.yaml", vector, "")
	text, err := os.ReadFile(misfit)
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "misfit.yaml", strings.Replace(string(text), "results: hits", "results: matches", 1))
	common := []string{"compare", "-m", "RR", "--bootstrap", "50", "--permutations", "50"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--gold", gold, "--run", vector, "--retriever", live, "--retriever", typo}, typo + ":5"},
		{[]string{"--gold", gold, "--run", vector, "--retriever", live, "--retriever", secret}, secret + ":6"},
		{[]string{"--gold", gold, "--retriever", live, "--run", vector, "--retriever", misfit}, misfit + `:2: field "results"`},
		{[]string{"--gold", noText, "--retriever", live, "--run", vector}, "gold.qrels"},
		{[]string{"--gold", gold, "--retriever", filepath.Join(dir, "nope.yaml"), "--run", vector}, "read " + filepath.Join(dir, "nope.yaml") + ": no such file or directory\n"},
		{[]string{"--gold", gold, "--retriever", live}, "at least two systems"},
		{[]string{"--gold", gold, "--retriever", live, "--run", vector, "--strict"}, "--strict applies to run files"},
		{[]string{"--gold", gold, "--run", vector, "--run", vector, "--max-failed-queries", "1"}, "--max-failed-queries needs --retriever"},
		{[]string{"--gold", gold, "--retriever", live, "--retriever", live, "--rank-by", "rank"}, "--rank-by applies to --run files"},
		{[]string{"--gold", gold, "--retriever", live, "--run", vector, "--name", "a"}, "--name: 1 names for 2 systems"},
	} {
		code, out, errs := evalgate(t, append(common, tc.args...)...)
		t.Logf("%v: %d %s", tc.args[len(tc.args)-2:], code, errs)
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, want 2 naming %q\n%s%s", tc.args, code, tc.want, out, errs)
		}
	}
	// The only requests: the probes of live.yaml before misfit.yaml's
	// probe failed (once in that case).
	if n := srv.requests.Load(); n != 1 {
		t.Errorf("the good retriever got %d requests, want its one probe", n)
	}
}

// The order of the systems is read off the command line in every form
// the flag parser takes: -r, --run=FILE, -retriever FILE, with flags and
// boolean flags between them.
func TestCompareSystemOrder(t *testing.T) {
	dir := t.TempDir()
	gold := writeTextGold(t, dir)
	a, b := writeRun(t, dir, "a.trec", 80, 7), writeRun(t, dir, "b.trec", 60, 10)
	_, live := serveRun(t, dir, "live.yaml", b, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-r", b, "--skip-no-relevant", "--retriever=" + live, "-m", "RR", "-r", a}, "measure b live Δ"},
		{[]string{"-retriever", live, "--run=" + a, "-m", "RR", "--strict=false", "--run", b}, "measure live a Δ"},
		{[]string{"-m", "RR", "--run", a, "--run", b, "--retriever", live}, "measure a b Δ"},
	} {
		code, out, errs := evalgate(t, append([]string{"compare", "--gold", gold, "--bootstrap", "50", "--permutations", "50"}, tc.args...)...)
		if cols := strings.Join(columns(out), " "); code != 0 || !strings.HasPrefix(cols, tc.want) {
			t.Errorf("%v: exit %d, columns %q, want %q…\n%s", tc.args, code, cols, tc.want, errs)
		}
	}
}
