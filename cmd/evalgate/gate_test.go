package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seedCriteria is the criteria file teams already write, unchanged.
const seedCriteria = `gates:
  - name: retrieval_recall_at_5
    threshold: 0.85 # absolute floor
    regression_max: 0.03 # may not drop more than 3pp from baseline
    severity: error # blocks merge
  - name: retrieval_mrr
    threshold: 0.62
    regression_max: 0.05
    severity: warning # PR comment, no block
`

// writeRun writes 100 queries with one relevant document each: `first` of
// them retrieve it at rank 1, `third` at rank 3, the rest not at all. So
// recall@5 = (first+third)/100 and MRR = (first + third/3)/100.
func writeRun(t *testing.T, dir, name string, first, third int) string {
	t.Helper()
	var b strings.Builder
	for q := 0; q < 100; q++ {
		docs := []string{"x1", "x2", "x3", "x4", "x5", "x6"}
		switch {
		case q < first:
			docs[0] = "rel"
		case q < first+third:
			docs[2] = "rel"
		}
		for r, d := range docs {
			fmt.Fprintf(&b, "q%03d Q0 %s %d %d t\n", q, d, r+1, 100-r)
		}
	}
	return write(t, dir, name, b.String())
}

func writeGold(t *testing.T, dir string) string {
	var b strings.Builder
	for q := 0; q < 100; q++ {
		fmt.Fprintf(&b, "q%03d 0 rel 1\n", q)
	}
	return write(t, dir, "gold.qrels", b.String())
}

func TestSeedCriteriaGateARun(t *testing.T) {
	dir := t.TempDir()
	gold, criteria := writeGold(t, dir), write(t, dir, "criteria.yaml", seedCriteria)
	baseline := writeRun(t, dir, "baseline.trec", 80, 7) // recall@5 87%, MRR 82.3%
	cases := []struct {
		name         string
		first, third int
		exit         int
		verdict      string
		text         []string
	}{
		{"pass", 80, 8, 0, "PASS", []string{"✅ All 2 gates pass: retrieval recall@5 88.0% (+1.0 points)."}},
		{"warn", 40, 47, 0, "WARN", []string{"⚠️ Passes with warnings: retrieval MRR is 55.7%, below the floor of 62.0%"}},
		{"fail", 74, 7, 1, "FAIL", []string{"❌ Blocked: retrieval recall@5 is 81.0%, below the floor of 85.0%",
			"retrieval recall@5 dropped from 87.0% to 81.0% (−6.0 points, more than the 3.0 points allowed)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := writeRun(t, dir, tc.name+".trec", tc.first, tc.third)
			report := filepath.Join(dir, tc.name+"-report")
			stepSummary := filepath.Join(dir, tc.name+"-step.md")
			t.Setenv("GITHUB_STEP_SUMMARY", stepSummary)
			code, out, errs := evalgate(t, "score", "--gold", gold, "--run", run, "--criteria", criteria,
				"--baseline-run", baseline, "--bootstrap", "200", "--permutations", "200", "--report", report)
			if code != tc.exit {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, tc.exit, out, errs)
			}
			if !strings.Contains(out, "verdict: "+tc.verdict+fmt.Sprintf(" (exit code %d)", tc.exit)) {
				t.Fatalf("printed verdict disagrees with exit code %d:\n%s", tc.exit, out)
			}
			for _, want := range tc.text {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			for _, f := range []string{"summary.json", "comment.md", "junit.xml", "report.html"} {
				b, err := os.ReadFile(filepath.Join(report, f))
				if err != nil || len(b) == 0 {
					t.Fatalf("report file %s: %v", f, err)
				}
			}
			comment, _ := os.ReadFile(filepath.Join(report, "comment.md"))
			if !strings.HasPrefix(string(comment), "### evalgate: "+tc.verdict) || !strings.Contains(string(comment), tc.text[0]) {
				t.Fatalf("comment.md:\n%s", comment)
			}
			step, _ := os.ReadFile(stepSummary)
			if string(step) != string(comment)+"\n" {
				t.Fatal("GITHUB_STEP_SUMMARY does not hold the comment")
			}
			var junit struct {
				Failures int `xml:"failures,attr"`
				Tests    int `xml:"tests,attr"`
			}
			jb, _ := os.ReadFile(filepath.Join(report, "junit.xml"))
			if err := xml.Unmarshal(jb, &junit); err != nil || junit.Tests != 2 || junit.Failures != tc.exit {
				t.Fatalf("junit.xml: %+v %v\n%s", junit, err, jb)
			}
			// Re-gating the saved summary gives the same verdict.
			code2, out2, _ := evalgate(t, "gate", "--criteria", criteria, "--summary", filepath.Join(report, "summary.json"))
			if code2 != tc.exit || !strings.Contains(out2, "verdict: "+tc.verdict) {
				t.Fatalf("evalgate gate: exit %d\n%s", code2, out2)
			}
		})
	}
}

func TestGateWithoutBaselineSaysNotChecked(t *testing.T) {
	dir := t.TempDir()
	gold, criteria := writeGold(t, dir), write(t, dir, "criteria.yaml", seedCriteria)
	run := writeRun(t, dir, "run.trec", 80, 8)
	code, out, _ := evalgate(t, "score", "--gold", gold, "--run", run, "--criteria", criteria)
	if code != 0 || !strings.Contains(out, "not checked: no baseline") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	code, _, errs := evalgate(t, "score", "--gold", gold, "--run", run, "--criteria", criteria, "--require-baseline")
	if code != 2 || !strings.Contains(errs, "no baseline") {
		t.Fatalf("--require-baseline without a baseline: exit %d %s", code, errs)
	}
}

func TestGateWithSavedBaseline(t *testing.T) {
	dir := t.TempDir()
	gold, criteria := writeGold(t, dir), write(t, dir, "criteria.yaml", seedCriteria)
	base := filepath.Join(dir, "baseline.json")
	if code, _, errs := evalgate(t, "score", "--gold", gold, "--run", writeRun(t, dir, "b.trec", 80, 7), "--summary-out", base); code != 0 {
		t.Fatal(errs)
	}
	code, out, _ := evalgate(t, "score", "--gold", gold, "--run", writeRun(t, dir, "r.trec", 74, 7), "--criteria", criteria, "--baseline", base)
	if code != 1 || !strings.Contains(out, "dropped from 87.0% to 81.0%") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	// A baseline from another gold set is refused, unless allowed.
	otherGold := write(t, dir, "other.qrels", "q000 0 rel 1\n")
	other := filepath.Join(dir, "other.json")
	evalgate(t, "score", "--gold", otherGold, "--run", writeRun(t, dir, "o.trec", 80, 7), "--summary-out", other)
	code, _, errs := evalgate(t, "score", "--gold", gold, "--run", writeRun(t, dir, "r2.trec", 80, 8), "--criteria", criteria, "--baseline", other)
	if code != 2 || !strings.Contains(errs, "different gold set") {
		t.Fatalf("gold change: exit %d %s", code, errs)
	}
	code, out, _ = evalgate(t, "score", "--gold", gold, "--run", writeRun(t, dir, "r3.trec", 80, 8), "--criteria", criteria, "--baseline", other, "--allow-gold-change")
	if code != 1 || !strings.Contains(out, "note: The baseline was scored on a different gold set") {
		t.Fatalf("allowed gold change: exit %d\n%s", code, out)
	}
}

func TestBadCriteriaExitTwo(t *testing.T) {
	dir := t.TempDir()
	gold := writeGold(t, dir)
	run := writeRun(t, dir, "r.trec", 80, 8)
	bad := write(t, dir, "bad.yaml", "gates:\n  - name: retrieval_recall_at_5\n    threshold: 85\n    severety: error\n")
	code, _, errs := evalgate(t, "score", "--gold", gold, "--run", run, "--criteria", bad)
	if code != 2 || !strings.Contains(errs, "bad.yaml:3") || !strings.Contains(errs, "bad.yaml:4") {
		t.Fatalf("exit %d: %s", code, errs)
	}
}

func TestCompareAndHistory(t *testing.T) {
	dir := t.TempDir()
	gold := writeGold(t, dir)
	a, b := writeRun(t, dir, "a.trec", 80, 7), writeRun(t, dir, "b.trec", 60, 10)
	code, out, errs := evalgate(t, "compare", "--gold", gold, "--run", a, "--run", b, "-m", "R@5,RR", "--bootstrap", "200", "--permutations", "200")
	if code != 0 || !strings.Contains(out, "R@5") || !strings.Contains(out, "−0.1700") {
		t.Fatalf("compare: exit %d\n%s\n%s", code, out, errs)
	}
	hist := filepath.Join(dir, "history")
	criteria := write(t, dir, "criteria.yaml", seedCriteria)
	for _, run := range []string{a, b} {
		if code, _, errs := evalgate(t, "score", "--gold", gold, "--run", run, "--history", hist); code != 0 {
			t.Fatal(errs)
		}
	}
	code, out, _ = evalgate(t, "history", "--history", hist, "--criteria", criteria, "--down-nights", "1", "--fail-on-alert")
	if code != 1 || !strings.Contains(out, "2 runs") || !strings.Contains(out, "below the floor of 85.0%") || !strings.Contains(out, "down since the previous run (−17.0 points)") {
		t.Fatalf("history: exit %d\n%s", code, out)
	}
}

// A verdict is printed only once every output it refers to is written: an
// output that cannot be written is an error and no verdict, never "exit
// code 0" followed by a failure; and none of the other outputs, the
// per-query file streamed while scoring included, is left behind.
func TestVerdictOnlyAfterReportsWritten(t *testing.T) {
	dir := t.TempDir()
	gold, criteria := writeGold(t, dir), write(t, dir, "criteria.yaml", seedCriteria)
	run := writeRun(t, dir, "run.trec", 80, 8)
	report := filepath.Join(dir, "report")
	if err := os.MkdirAll(filepath.Join(report, "report.html"), 0o755); err != nil { // in the way
		t.Fatal(err)
	}
	hist, pq, sum := filepath.Join(dir, "history"), filepath.Join(dir, "pq.jsonl"), filepath.Join(dir, "s.json")
	code, out, errs := evalgate(t, "score", "--gold", gold, "--run", run, "--criteria", criteria,
		"--report", report, "--history", hist, "--per-query", pq, "--summary-out", sum)
	if code != 2 || strings.Contains(out, "verdict:") || !strings.Contains(errs, "report.html: is a directory") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, p := range []string{hist, pq, sum, filepath.Join(report, "summary.json")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s exists after a failed command: %v", p, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// Output paths that cannot be written are refused before any scoring, with
// exit 2 and nothing written.
func TestUnwritableOutputsRefusedFirst(t *testing.T) {
	dir := t.TempDir()
	gold, run := writeGold(t, dir), writeRun(t, dir, "run.trec", 80, 8)
	afile := write(t, dir, "afile", "x")
	pq := filepath.Join(dir, "pq.jsonl")
	for _, tc := range []struct{ flag, path, want string }{
		{"-o", filepath.Join(dir, "missing", "o.txt"), "directory " + filepath.Join(dir, "missing") + " does not exist"},
		{"--summary-out", dir, "is a directory, want a file"},
		{"--report", filepath.Join(afile, "sub"), afile + " is not a directory"},
		{"--per-query", filepath.Join(afile, "pq.jsonl"), afile + " is not a directory"},
	} {
		args := []string{"score", "--gold", gold, "--run", run, tc.flag, tc.path}
		if tc.flag != "--per-query" {
			args = append(args, "--per-query", pq)
		}
		code, out, errs := evalgate(t, args...)
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%s %s: exit %d\n%s\n%s", tc.flag, tc.path, code, out, errs)
		}
		if _, err := os.Stat(pq); !os.IsNotExist(err) {
			t.Errorf("%s: the per-query file was written", tc.flag)
		}
	}
}

// trec_eval-style lines carry no warnings or verdict: with --format trec
// they go to stderr, and the exit code matches the verdict printed there.
func TestTRECFormatKeepsWarningsAndVerdict(t *testing.T) {
	dir := t.TempDir()
	gold, criteria := writeGold(t, dir), write(t, dir, "criteria.yaml", seedCriteria)
	run := writeRun(t, dir, "run.trec", 70, 5)
	// q100 is only in the run: a warning.
	f, err := os.OpenFile(run, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, "q100 Q0 d 1 1 t")
	f.Close()
	code, out, errs := evalgate(t, "score", "--gold", gold, "--run", run, "--criteria", criteria, "-f", "trec")
	if code != 1 || !strings.Contains(out, "recall_5") || strings.Contains(out, "verdict") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(errs, "warning: 1 query of the run is not in the gold set") || !strings.Contains(errs, "verdict: FAIL (exit code 1)") {
		t.Fatalf("stderr lacks the warning or the verdict:\n%s", errs)
	}
}

// Re-gating a recorded summary replaces its history entry; evalgate
// history --html draws the trend lines of the whole history.
func TestRegateKeepsOneHistoryEntry(t *testing.T) {
	dir := t.TempDir()
	gold, criteria := writeGold(t, dir), write(t, dir, "criteria.yaml", seedCriteria)
	hist := filepath.Join(dir, "history")
	var last string
	for i, first := range []int{80, 84, 88} {
		last = filepath.Join(dir, fmt.Sprintf("s%d.json", i))
		run := writeRun(t, dir, fmt.Sprintf("r%d.trec", i), first, 5)
		if code, _, errs := evalgate(t, "score", "--gold", gold, "--run", run, "--history", hist, "--summary-out", last); code != 0 {
			t.Fatal(errs)
		}
	}
	if code, _, errs := evalgate(t, "gate", "--summary", last, "--criteria", criteria, "--history", hist); code != 0 {
		t.Fatal(errs)
	}
	ents, err := os.ReadDir(hist)
	if err != nil || len(ents) != 3 {
		t.Fatalf("history has %d entries after re-gating, want 3: %v", len(ents), err)
	}
	page := filepath.Join(dir, "trend.html")
	if code, _, errs := evalgate(t, "history", "--history", hist, "--criteria", criteria, "--html", page); code != 0 {
		t.Fatal(errs)
	}
	b, err := os.ReadFile(page)
	if err != nil || !strings.Contains(string(b), `id="trend-R-5"`) {
		t.Fatalf("history --html has no trend line for R@5: %v", err)
	}
}

// TestCompareOnlyRunQueriesPairsEachRun: with --only-run-queries two runs
// covering different queries are each compared with the reference on their
// own queries, and the table says so: each run's Δ is against the
// reference's value on the same queries, never on another run's.
func TestCompareOnlyRunQueriesPairsEachRun(t *testing.T) {
	dir := t.TempDir()
	gold := writeGold(t, dir)
	ref := writeRun(t, dir, "ref.trec", 50, 0)  // MRR 1 on queries 0-49, 0 on the rest
	all := writeRun(t, dir, "all.trec", 0, 100) // MRR 1/3 everywhere
	text, err := os.ReadFile(all)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(text), "\n")
	half := write(t, dir, "half.trec", strings.Join(lines[:len(lines)/2], "")) // queries 0-49
	code, out, errs := evalgate(t, "compare", "--gold", gold, "--run", ref, "--run", all, "--run", half,
		"-m", "RR", "--only-run-queries", "--bootstrap", "100", "--permutations", "100")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	for _, want := range []string{"scored on each run's own queries", "reference on its 100 queries", "reference on its 50 queries"} {
		if !strings.Contains(out, want) {
			t.Errorf("compare lacks %q:\n%s", want, out)
		}
	}
	// all.trec against the reference on every query: 1/3 − 1/2; half.trec
	// on queries 0-49, where the reference scores 1: 1/3 − 1.
	for _, want := range []string{"0.5000", "  −0.1667  ", "1.0000", "  −0.6667  "} {
		if strings.Count(out, want) != 1 {
			t.Errorf("want %q once:\n%s", want, out)
		}
	}
}

// A baseline run that shares no query with the gold set is bad input (exit
// 2, naming the file), and one that covers only some queries is scored: the
// rest of its rankings are empty, whole shards of them included.
func TestBaselineRunCoverage(t *testing.T) {
	dir := t.TempDir()
	gold := writeGold(t, dir)
	run := writeRun(t, dir, "run.trec", 80, 10)
	other := write(t, dir, "other.trec", "z1 Q0 rel 1 1 t\n")
	code, out, errs := evalgate(t, "score", "--gold", gold, "--run", run, "--baseline-run", other, "-m", "RR")
	if code != 2 || out != "" || !strings.Contains(errs, `other.trec: no data: the baseline run's one query, "z1", is not in the gold set`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	one := write(t, dir, "one.trec", "q000 Q0 rel 1 1 t\n")
	code, out, errs = evalgate(t, "score", "--gold", gold, "--run", run, "--baseline-run", one, "-m", "RR", "--format", "json")
	if code != 0 || !strings.Contains(out, `"baseline"`) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
}

// A run that shares no query with the gold set, or has none, is bad input:
// trec_eval refuses it too, and a table of zeros would hide mismatched ids.
func TestRunWithoutGoldQueriesIsBadInput(t *testing.T) {
	dir := t.TempDir()
	gold := writeGold(t, dir)
	for name, content := range map[string]string{"ids.trec": "1 Q0 rel 1 1 t\n2 Q0 rel 1 1 t\n", "empty.trec": "# no results\n"} {
		run := write(t, dir, name, content)
		for _, cmd := range []string{"score", "run"} {
			code, out, errs := evalgate(t, "--log-format", "console", cmd, "--gold", gold, "--run", run, "-m", "RR")
			want := `none of the run's 2 queries (first "1") is in the gold set`
			if name == "empty.trec" {
				want = "the run has no queries"
			}
			if code != 2 || out != "" || !strings.Contains(errs, name+": no data: "+want) {
				t.Errorf("%s %s: exit %d\n%s\n%s", cmd, name, code, out, errs)
			}
		}
	}
}

// A directory where an input file goes, and a history directory that does
// not exist (a mistyped path in a nightly job), are bad usage: exit 2.
func TestBadPathsExitTwo(t *testing.T) {
	dir := t.TempDir()
	gold, run := writeGold(t, dir), writeRun(t, dir, "run.trec", 80, 8)
	criteria := write(t, dir, "criteria.yaml", seedCriteria)
	for _, args := range [][]string{
		{"score", "--gold", gold, "--run", dir},
		{"score", "--gold", dir, "--run", run},
		{"score", "--gold", gold, "--run", run, "--criteria", dir},
		{"history", "--history", filepath.Join(dir, "no-such-dir"), "--criteria", criteria, "--fail-on-alert"},
	} {
		if code, out, errs := evalgate(t, args...); code != 2 || out != "" || errs == "" {
			t.Errorf("%v: exit %d\n%s\n%s", args, code, out, errs)
		}
	}
}

// writeTaggedGold writes the 100 queries of writeGold as JSONL, the first
// legal of them tagged category=legal and the rest category=policy.
func writeTaggedGold(t *testing.T, dir string, legal int) string {
	t.Helper()
	var b strings.Builder
	for q := 0; q < 100; q++ {
		cat := "policy"
		if q < legal {
			cat = "legal"
		}
		fmt.Fprintf(&b, "{\"query_id\": \"q%03d\", \"relevant_ids\": [\"rel\"], \"category\": %q}\n", q, cat)
	}
	return write(t, dir, "gold.jsonl", b.String())
}

// evalgate history checks a tag gate's floor on the tag group (an alert,
// exit 1 with --fail-on-alert) and names the gates it cannot check.
func TestHistoryChecksTagGates(t *testing.T) {
	dir := t.TempDir()
	gold := writeTaggedGold(t, dir, 50)
	hist := filepath.Join(dir, "history")
	// A run that finds nothing, then one that finds every relevant
	// document (at rank 3): the latest legal group is at 100%.
	if code, _, errs := evalgate(t, "score", "--gold", gold, "--run", writeRun(t, dir, "r.trec", 0, 0), "-m", "R@5", "--history", hist); code != 0 {
		t.Fatal(errs)
	}
	run := writeRun(t, dir, "r2.trec", 0, 0)
	text, _ := os.ReadFile(run)
	write(t, dir, "r2.trec", strings.ReplaceAll(string(text), "x3 3", "rel 3")) // every query finds rel at rank 3
	if code, _, errs := evalgate(t, "score", "--gold", gold, "--run", run, "-m", "R@5", "--history", hist); code != 0 {
		t.Fatal(errs)
	}
	criteria := write(t, dir, "tags.yaml", `gates:
  - name: legal_recall
    metric: R@5
    tag: category=legal
    threshold: 0.5
  - name: hr_recall
    metric: R@5
    tag: category=hr
    threshold: 0.5
`)
	code, out, errs := evalgate(t, "history", "--history", hist, "--criteria", criteria, "--fail-on-alert")
	if code != 0 || !strings.Contains(out, "gate hr_recall (R@5 for category=hr): not checked: no query of the latest run has the tag category=hr") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	// A latest run that finds nothing: the legal group is at 0%.
	none := writeRun(t, dir, "r3.trec", 0, 0)
	if code, _, errs := evalgate(t, "score", "--gold", gold, "--run", none, "-m", "R@5", "--history", hist); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs = evalgate(t, "history", "--history", hist, "--criteria", criteria, "--fail-on-alert")
	if code != 1 || !strings.Contains(out, "below the floor of 50.0% (gate legal_recall)") || !strings.Contains(out, "R@5 for category=legal") {
		t.Fatalf("tag gate below its floor: exit %d\n%s\n%s", code, out, errs)
	}
}
