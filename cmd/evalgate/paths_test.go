package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An output on an input's file — the same path, another spelling of it, a
// symbolic or a hard link — is refused before anything is read (the
// criteria here are broken, and that is not what is reported), with exit
// 2, and the input is left as it was; so are two outputs on one file.
func TestOutputsNeverReplaceInputs(t *testing.T) {
	dir := t.TempDir()
	gold, run := writeGold(t, dir), writeRun(t, dir, "run.trec", 80, 8)
	badCriteria := write(t, dir, "c.yaml", "gates: [\n")
	sum := filepath.Join(dir, "s.json")
	if code, _, errs := evalgate(t, "score", "--gold", gold, "--run", run, "--summary-out", sum); code != 0 {
		t.Fatal(errs)
	}
	if err := os.Symlink(run, filepath.Join(dir, "run-link.trec")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(gold, filepath.Join(dir, "gold-hard.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(dir, "again")); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "report")
	if err := os.MkdirAll(report, 0o755); err != nil {
		t.Fatal(err)
	}
	inReport := write(t, report, "comment.md", "gates:\n  - name: retrieval_mrr\n    threshold: 0.5\n")
	before := map[string]string{}
	for _, p := range []string{gold, run, sum, inReport} {
		b, _ := os.ReadFile(p)
		before[p] = string(b)
	}
	score := []string{"score", "--gold", gold, "--run", run}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"-o on the gold set", append(score, "-o", gold), "--output " + gold + " is the input --gold " + gold},
		{"another spelling", append(score, "--summary-out", dir+"/./x/../run.trec"), "is the input --run " + run},
		{"symbolic link", append(score, "--per-query", filepath.Join(dir, "run-link.trec")), "is the input --run " + run},
		{"hard link", append(score, "--html", filepath.Join(dir, "gold-hard.jsonl")), "is the input --gold " + gold},
		{"linked directory", append(score, "--junit", filepath.Join(dir, "again", "gold.qrels")), "is the input --gold " + gold},
		{"criteria in the report", append(score, "--criteria", inReport, "--report", report), "(comment.md) " + inReport + " is the input --criteria"},
		{"before reading", append(score, "--criteria", badCriteria, "-o", run), "is the input --run"},
		{"two outputs", append(score, "-o", filepath.Join(dir, "out.json"), "--summary-out", filepath.Join(dir, "again", "out.json")),
			"are the same file: one output would replace the other"},
		{"gate's summary", []string{"gate", "--summary", sum, "--criteria", badCriteria, "--summary-out", sum}, "is the input --summary " + sum},
		{"run", []string{"run", "--gold", gold, "--run", run, "-o", run}, "is the input --run"},
		{"convert", []string{"convert", sum, filepath.Join(dir, "again", "s.json")}, "OUT is IN"},
	} {
		code, out, errs := evalgate(t, append([]string{"--log-format", "console"}, tc.args...)...)
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) || strings.Contains(errs, "Try:") {
			t.Errorf("%s: exit %d\n%s\n%s", tc.name, code, out, errs)
		}
	}
	for p, want := range before {
		if b, _ := os.ReadFile(p); string(b) != want {
			t.Errorf("%s was changed", p)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out.json")); !os.IsNotExist(err) {
		t.Errorf("out.json written: %v", err)
	}
}

// A per-query file whose extension names no format is refused before
// scoring, by run --resume too, instead of being written as TSV.
func TestPerQueryUnknownExtension(t *testing.T) {
	dir := t.TempDir()
	gold, run := writeGold(t, dir), writeRun(t, dir, "run.trec", 80, 8)
	for _, args := range [][]string{
		{"score", "--gold", gold, "--run", run, "--per-query", filepath.Join(dir, "pq.txt")},
		{"score", "--gold", gold, "--run", run, "--per-query", filepath.Join(dir, "pq.json")},
		{"run", "--nats", "nats://127.0.0.1:1", "--resume", "job", "--per-query", filepath.Join(dir, "pq.csv")},
	} {
		code, _, errs := evalgate(t, append([]string{"--log-format", "console"}, args...)...)
		if code != 2 || !strings.Contains(errs, "unknown extension") {
			t.Errorf("%v: exit %d\n%s", args, code, errs)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "pq*")); len(left) > 0 {
		t.Errorf("written: %v", left)
	}
}
