package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// evalgate runs the command in-process and returns exit code, stdout and
// stderr.
func evalgate(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"evalgate"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	goldQrels = "q1 0 d1 1\nq1 0 d2 2\nq2 0 d3 1\n"
	runTREC   = "q1 Q0 d9 1 9.0 t\nq1 Q0 d1 2 8.0 t\nq1 Q0 d2 3 7.0 t\nq2 Q0 d3 1 5.0 t\n"
)

func TestScoreTable(t *testing.T) {
	dir := t.TempDir()
	g, r := write(t, dir, "g.qrels", goldQrels), write(t, dir, "r.trec", runTREC)
	code, out, errs := evalgate(t, "score", "--gold", g, "--run", r, "-m", "mrr,recall@1,P@2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// q1: first relevant at rank 2 (RR 0.5), q2 at rank 1: MRR 0.75.
	for _, want := range []string{"2 queries scored", "RR", "0.7500", "R@1", "0.5000", "P@2"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestMeasureCutoffLists: trec_eval's cutoff lists reach the measure
// parser whole (recall.1,2 is recall.1 and recall.2), and a repeated -m
// adds to the list.
func TestMeasureCutoffLists(t *testing.T) {
	dir := t.TempDir()
	g, r := write(t, dir, "g.qrels", goldQrels), write(t, dir, "r.trec", runTREC)
	code, out, errs := evalgate(t, "score", "--gold", g, "--run", r, "-m", "recall.1,2", "-m", "P.1,3", "-f", "trec")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	// q1 has 2 relevant, first at rank 2; q2 has its one relevant at rank 1.
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		got = append(got, strings.Join(strings.Fields(l), " "))
	}
	want := []string{"recall_1 all 0.5000", "recall_2 all 0.7500", "P_1 all 0.5000", "P_3 all 0.5000"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", out, strings.Join(want, "\n"))
	}
}

func TestScoreJSONAndSummaryOut(t *testing.T) {
	dir := t.TempDir()
	g, r := write(t, dir, "g.qrels", goldQrels), write(t, dir, "r.trec", runTREC)
	sumPath := filepath.Join(dir, "summary.json")
	code, out, errs := evalgate(t, "score", "--gold", g, "--run", r, "-m", "RR", "--format", "json", "--summary-out", sumPath)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var s struct {
		Schema   string
		Measures []struct {
			Name  string
			Value float64
		}
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if s.Schema != "evalgate.summary/v1" || len(s.Measures) != 1 || s.Measures[0].Value != 0.75 {
		t.Fatalf("summary %+v", s)
	}
	saved, err := os.ReadFile(sumPath)
	if err != nil || !bytes.Equal(saved, []byte(out)) {
		t.Fatalf("--summary-out differs from the JSON output (%v)", err)
	}
}

func TestScoreTRECWithPerQueryLines(t *testing.T) {
	dir := t.TempDir()
	g, r := write(t, dir, "g.qrels", goldQrels), write(t, dir, "r.trec", runTREC)
	code, out, errs := evalgate(t, "score", "--gold", g, "--run", r, "-m", "recip_rank,num_q", "--format", "trec", "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := "recip_rank            \tq1\t0.5000\nnum_q                 \tq1\t1\n" +
		"recip_rank            \tq2\t1.0000\nnum_q                 \tq2\t1\n" +
		"recip_rank            \tall\t0.7500\nnum_q                 \tall\t2\n"
	if out != want {
		t.Fatalf("trec output:\n%q\nwant\n%q", out, want)
	}
}

func TestPerQueryFiles(t *testing.T) {
	dir := t.TempDir()
	g, r := write(t, dir, "g.qrels", goldQrels), write(t, dir, "r.trec", runTREC)
	for _, ext := range []string{".jsonl", ".tsv", ".trec", ".arrow", ".arrows", ".parquet"} {
		p := filepath.Join(dir, "pq"+ext)
		code, _, errs := evalgate(t, "score", "--gold", g, "--run", r, "-m", "RR", "--per-query", p)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", ext, code, errs)
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			t.Fatalf("%s: %v", ext, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "pq.jsonl"))
	if string(b) != "{\"query_id\":\"q1\",\"RR\":0.5}\n{\"query_id\":\"q2\",\"RR\":1}\n" {
		t.Fatalf("jsonl per-query:\n%s", b)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "pq.tsv"))
	if string(b) != "query_id\tRR\nq1\t0.5\nq2\t1\n" {
		t.Fatalf("tsv per-query:\n%s", b)
	}
}

func TestBadInputExitsTwoAndWritesNothing(t *testing.T) {
	dir := t.TempDir()
	g := write(t, dir, "g.qrels", goldQrels)
	bad := write(t, dir, "bad.trec", "q1 Q0 d1 1 8.0 t\nq1 Q0 d2 2 abc t\nq2 Q0 d3 1 NaN t\nq2 Q0 d4 2\n")
	pq, out, sum := filepath.Join(dir, "pq.jsonl"), filepath.Join(dir, "out.txt"), filepath.Join(dir, "s.json")
	code, _, errs := evalgate(t, "score", "--gold", g, "--run", bad, "--per-query", pq, "-o", out, "--summary-out", sum)
	if code != 2 {
		t.Fatalf("exit %d, want 2: %s", code, errs)
	}
	for _, want := range []string{"bad.trec:2:12: field \"score\"", "bad.trec:3:12: field \"score\": score is not finite", "bad.trec:4: wrong number of fields: want 6"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if n := e.Name(); n != "g.qrels" && n != "bad.trec" {
			t.Errorf("left behind %s", n)
		}
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	dir := t.TempDir()
	g, r := write(t, dir, "g.qrels", goldQrels), write(t, dir, "r.trec", runTREC)
	for name, args := range map[string][]string{
		"missing --run":    {"score", "--gold", g},
		"no such file":     {"score", "--gold", g, "--run", filepath.Join(dir, "nope.trec")},
		"unknown measure":  {"score", "--gold", g, "--run", r, "-m", "bogus@5"},
		"unknown flag":     {"score", "--gold", g, "--run", r, "--frobnicate"},
		"bad format":       {"score", "--gold", g, "--run", r, "--format", "xml"},
		"unknown command":  {"frobnicate"},
		"-q without trec":  {"score", "--gold", g, "--run", r, "-q"},
		"bad per-query":    {"score", "--gold", g, "--run", r, "--per-query", filepath.Join(dir, "x.xlsx")},
		"negative depth":   {"score", "--gold", g, "--run", r, "--depth", "-1"},
		"convert one arg":  {"convert", g},
		"gen bad format":   {"gen", "--format", "xml"},
		"gen tags on trec": {"gen", "--tags"},
		"gen docs alone":   {"gen", "--docs", "10"},
		"gen corpus depth": {"gen", "--corpus", "--depth", "10"},
		"gen corpus trec":  {"gen", "--corpus", "--format", "trec"},
		"gen corpus 0 doc": {"gen", "--corpus", "--docs", "0"},
		"stray argument":   {"score", "--gold", g, "--run", r, "extra"},
		"late log level":   {"score", "--log-level", "info", "--gold", g, "--run", r},
		"bad log level":    {"--log-level", "bogus", "score", "--gold", g, "--run", r},
		"resume + shards":  {"run", "--nats", "nats://127.0.0.1:1", "--resume", "j", "--shards", "7"},
		"resume + depth":   {"run", "--nats", "nats://127.0.0.1:1", "--resume", "j", "--depth", "7"},
	} {
		code, _, errs := evalgate(t, args...)
		if code != 2 {
			t.Errorf("%s: exit %d, want 2 (%s)", name, code, errs)
		}
	}
	_, _, errs := evalgate(t, "score", "--gold", g, "--run", r, "-m", "bogus@5")
	if !strings.Contains(errs, "known measures") {
		t.Errorf("unknown measure error does not list the known ones: %s", errs)
	}
}

func TestRunPassedAsGoldGetsHint(t *testing.T) {
	dir := t.TempDir()
	r := write(t, dir, "r.trec", runTREC)
	code, _, errs := evalgate(t, "score", "--gold", r, "--run", r)
	if code != 2 || !strings.Contains(errs, "looks like a TREC run line") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

func TestConvertRoundTrip(t *testing.T) {
	dir := t.TempDir()
	g, r := write(t, dir, "g.qrels", goldQrels), write(t, dir, "r.trec", runTREC)
	var want string
	for i, ext := range []string{"", ".arrow", ".arrows", ".parquet"} {
		gi, ri := g, r
		if ext != "" {
			gi, ri = filepath.Join(dir, "g"+ext), filepath.Join(dir, "r"+ext)
			for _, c := range [][2]string{{g, gi}, {r, ri}} {
				if code, _, errs := evalgate(t, "convert", c[0], c[1]); code != 0 {
					t.Fatalf("convert %s: exit %d: %s", c[1], code, errs)
				}
			}
		}
		code, out, errs := evalgate(t, "score", "--gold", gi, "--run", ri, "--format", "trec")
		if code != 0 {
			t.Fatalf("score %s: exit %d: %s", ext, code, errs)
		}
		if i == 0 {
			want = out
		} else if out != want {
			t.Fatalf("%s: scores differ after conversion:\n%s\nwant\n%s", ext, out, want)
		}
	}
}

func TestGenIsDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		if code, _, errs := evalgate(t, "gen", "-n", "300", "-k", "20", "--seed", "42", "--out", d); code != 0 {
			t.Fatalf("gen: exit %d: %s", code, errs)
		}
	}
	for _, f := range []string{"gold.qrels", "run.trec"} {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, _ := os.ReadFile(filepath.Join(b, f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Fatalf("%s differs between two runs with the same seed", f)
		}
	}
}

func TestGenCorpusIsDeterministic(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, d := range []string{a, b} {
		code, _, errs := evalgate(t, "gen", "--corpus", "-n", "200", "--docs", "700", "--tags", "--seed", "42", "--out", d)
		if code != 0 || !strings.Contains(errs, "(700 documents)") || !strings.Contains(errs, "(200 queries)") {
			t.Fatalf("gen --corpus: exit %d: %s", code, errs)
		}
	}
	for f, lines := range map[string]int{"corpus.jsonl": 700, "gold.jsonl": 200} {
		x, _ := os.ReadFile(filepath.Join(a, f))
		y, _ := os.ReadFile(filepath.Join(b, f))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Fatalf("%s differs between two runs with the same seed", f)
		}
		if n := bytes.Count(x, []byte("\n")); n != lines {
			t.Fatalf("%s has %d lines, want %d", f, n, lines)
		}
	}
}

// Every bad line of a gold file is collected: the first ten in full, then
// a count of the rest (the gold path used to keep only the first).
func TestBadGoldCollectsErrors(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 1; i <= 25; i++ {
		fmt.Fprintf(&b, "q%d 0 d%d x\n", i, i)
	}
	g := write(t, dir, "bad.qrels", b.String())
	run := write(t, dir, "r.trec", "q1 Q0 d1 1 1 t\n")
	code, _, errs := evalgate(t, "score", "--gold", g, "--run", run)
	if code != 2 || strings.Count(errs, `field "grade"`) != 10 || !strings.Contains(errs, "bad.qrels:10:") ||
		!strings.Contains(errs, "(and 15 more errors)") {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
}

// A gold set without queries (an empty file, or only comments) is bad
// input, not a summary of zeros.
func TestEmptyGoldIsBadInput(t *testing.T) {
	dir := t.TempDir()
	g := write(t, dir, "empty.qrels", "# nothing judged yet\n")
	run := write(t, dir, "r.trec", "q1 Q0 d1 1 1 t\n")
	code, out, errs := evalgate(t, "score", "--gold", g, "--run", run)
	if code != 2 || out != "" || !strings.Contains(errs, "empty.qrels: no data: the gold set has no queries") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}
