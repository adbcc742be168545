package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A criteria file whose second YAML document would fail is refused with
// its file and line, not passed on its first document (exit 2).
func TestCriteriaSecondDocumentRefused(t *testing.T) {
	dir := t.TempDir()
	gold, run := writeGold(t, dir), writeRun(t, dir, "run.trec", 80, 8)
	crit := write(t, dir, "c.yaml", "gates:\n  - name: retrieval_mrr\n    threshold: 0.1\n---\ngates:\n  - name: retrieval_recall_at_5\n    threshold: 0.99\n")
	code, out, errs := evalgate(t, "score", "--gold", gold, "--run", run, "--criteria", crit)
	if code != 2 || out != "" || !strings.Contains(errs, crit+":4: a second YAML document starts here") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	dup := write(t, dir, "dup.yaml", "gates:\n  - name: retrieval_recall_at_5\n    threshold: 0.99\ngates:\n  - name: retrieval_mrr\n    threshold: 0.1\n")
	code, _, errs = evalgate(t, "score", "--gold", gold, "--run", run, "--criteria", dup)
	if code != 2 || !strings.Contains(errs, dup+`:4: field "gates": repeated key (first at line 1)`) {
		t.Fatalf("exit %d\n%s", code, errs)
	}
}

// A gate with only a regression limit and no baseline is not_checked in
// the summary JSON and skipped in JUnit; the exit code is unchanged, and
// --require-baseline still refuses it.
func TestRegressionOnlyGateNotCheckedCLI(t *testing.T) {
	dir := t.TempDir()
	gold, run := writeGold(t, dir), writeRun(t, dir, "run.trec", 80, 8)
	crit := write(t, dir, "c.yaml", "gates:\n  - name: retrieval_mrr\n    threshold: 0.5\n  - name: retrieval_recall_at_5\n    regression_max: 0.03\n")
	report := filepath.Join(dir, "report")
	code, out, errs := evalgate(t, "score", "--gold", gold, "--run", run, "--criteria", crit, "--report", report)
	if code != 0 || !strings.Contains(out, "✅ 1 of 2 gates passes, 1 not checked: retrieval MRR") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	var s struct {
		Gate struct {
			Gates []struct{ Name, Status string }
		}
	}
	b, _ := os.ReadFile(filepath.Join(report, "summary.json"))
	if err := json.Unmarshal(b, &s); err != nil || len(s.Gate.Gates) != 2 || s.Gate.Gates[1].Status != "not_checked" {
		t.Fatalf("summary.json gates %+v (%v)", s.Gate.Gates, err)
	}
	var junit struct {
		Skipped int `xml:"skipped,attr"`
		Cases   []struct {
			Name    string `xml:"name,attr"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testsuite>testcase"`
	}
	jb, _ := os.ReadFile(filepath.Join(report, "junit.xml"))
	if err := xml.Unmarshal(jb, &junit); err != nil || junit.Skipped != 1 || junit.Cases[1].Skipped == nil ||
		junit.Cases[1].Skipped.Message != "regression not checked: no baseline" {
		t.Fatalf("junit.xml: %+v %v\n%s", junit, err, jb)
	}
	if code, _, _ := evalgate(t, "score", "--gold", gold, "--run", run, "--criteria", crit, "--require-baseline"); code != 2 {
		t.Fatalf("--require-baseline: exit %d", code)
	}
}

// A saved baseline scored with another --rel-level is refused before
// scoring (exit 2, nothing printed), naming the baseline file and the
// option with both values, by score and by gate; --allow-config-change
// takes it with a note.
func TestBaselineScoredWithOtherOptions(t *testing.T) {
	dir := t.TempDir()
	gold, criteria := writeGold(t, dir), write(t, dir, "criteria.yaml", seedCriteria)
	base := filepath.Join(dir, "base.json")
	if code, _, errs := evalgate(t, "score", "--gold", gold, "--run", writeRun(t, dir, "b.trec", 50, 7), "--rel-level", "2", "--depth", "3", "--summary-out", base); code != 0 {
		t.Fatal(errs)
	}
	run := writeRun(t, dir, "r.trec", 90, 5)
	want := base + ": gate: the baseline was scored with other options: rel_level (--rel-level) 2 in the baseline, 1 now; depth (--depth) 3 in the baseline, 0 now"
	code, out, errs := evalgate(t, "score", "--gold", gold, "--run", run, "--criteria", criteria, "--baseline", base)
	if code != 2 || out != "" || !strings.Contains(errs, want) {
		t.Fatalf("score: exit %d\n%s\n%s", code, out, errs)
	}
	sum := filepath.Join(dir, "s.json")
	if code, _, errs := evalgate(t, "score", "--gold", gold, "--run", run, "--summary-out", sum); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs = evalgate(t, "gate", "--summary", sum, "--criteria", criteria, "--baseline", base)
	if code != 2 || out != "" || !strings.Contains(errs, want) {
		t.Fatalf("gate: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = evalgate(t, "score", "--gold", gold, "--run", run, "--criteria", criteria, "--baseline", base, "--allow-config-change")
	if code != 0 || !strings.Contains(out, "note: The baseline was scored with other options (--allow-config-change): rel_level (--rel-level) 2 in the baseline, 1 now") {
		t.Fatalf("allowed: exit %d\n%s\n%s", code, out, errs)
	}
}

// --report DIR without --criteria writes all four files: the comment with
// the measures and the tag table, JUnit with a test case per measure.
func TestReportWithoutCriteria(t *testing.T) {
	dir := t.TempDir()
	gold, run := writeTaggedGold(t, dir, 30), writeRun(t, dir, "run.trec", 80, 8)
	report := filepath.Join(dir, "report")
	step := filepath.Join(dir, "step.md")
	t.Setenv("GITHUB_STEP_SUMMARY", step)
	code, out, errs := evalgate(t, "score", "--gold", gold, "--run", run, "-m", "R@5,RR", "--report", report)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	comment, err := os.ReadFile(filepath.Join(report, "comment.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### evalgate: 100 queries scored", "| recall@5 `R@5` | 88.0% |", "**recall@5 by tag** (lowest first)", "| category=legal | 30 | 100.0% |"} {
		if !strings.Contains(string(comment), want) {
			t.Errorf("comment.md lacks %q:\n%s", want, comment)
		}
	}
	var junit struct {
		Tests int `xml:"tests,attr"`
	}
	jb, err := os.ReadFile(filepath.Join(report, "junit.xml"))
	if err != nil || xml.Unmarshal(jb, &junit) != nil || junit.Tests != 2 {
		t.Fatalf("junit.xml: %v\n%s", err, jb)
	}
	for _, f := range []string{"summary.json", "report.html"} {
		if _, err := os.Stat(filepath.Join(report, f)); err != nil {
			t.Error(err)
		}
	}
	if s, _ := os.ReadFile(step); string(s) != string(comment)+"\n" {
		t.Errorf("GITHUB_STEP_SUMMARY does not hold the comment:\n%s", s)
	}
}
