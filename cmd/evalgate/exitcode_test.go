package main

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readmeExitCodes reads the exit-code table of the README: code and
// meaning of each row.
func readmeExitCodes(t *testing.T) map[int]string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Exit codes\n")
	if !ok {
		t.Fatal("README.md has no section ## Exit codes")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile(`(?m)^\| (\d+) \| (.+) \|$`)
	out := map[int]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		code, _ := strconv.Atoi(m[1])
		out[code] = m[2]
	}
	if len(out) == 0 {
		t.Fatal("README.md: no rows in the exit-code table")
	}
	return out
}

// TestREADMEExitCodes walks the README's exit-code table: for every row a
// representative set of commands exits with its code, and no command here
// exits with a code the table does not have. For code 2, one command per
// kind of problem the row names.
func TestREADMEExitCodes(t *testing.T) {
	dir := t.TempDir()
	gold, criteria := writeGold(t, dir), write(t, dir, "criteria.yaml", seedCriteria)
	pass, fail := writeRun(t, dir, "pass.trec", 90, 5), writeRun(t, dir, "fail.trec", 50, 5)
	base := filepath.Join(dir, "base.json")
	if code, _, errs := evalgate(t, "score", "--gold", gold, "--run", pass, "--rel-level", "2", "--summary-out", base); code != 0 {
		t.Fatal(errs)
	}
	otherGold := filepath.Join(dir, "other-gold.json")
	if code, _, errs := evalgate(t, "score", "--gold", write(t, dir, "other.qrels", "q000 0 rel 1\n"), "--run", pass, "--summary-out", otherGold); code != 0 {
		t.Fatal(errs)
	}
	onlyRegression := write(t, dir, "regression.yaml", "gates:\n  - name: retrieval_recall_at_5\n    regression_max: 0.03\n")
	hist := filepath.Join(dir, "hist")
	for _, run := range []string{pass, fail} {
		if code, _, errs := evalgate(t, "score", "--gold", gold, "--run", run, "--history", hist); code != 0 {
			t.Fatal(errs)
		}
	}
	badHist := filepath.Join(dir, "bad-hist")
	if err := os.MkdirAll(badHist, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, badHist, "20260101T000000.000000000Z-x.json", `{"not": "a summary"}`)
	truncated := write(t, dir, "truncated.json", `{"schema": "evalgate.summary/v1", "inputs": {"gold": {"pa`)
	afile := write(t, dir, "afile", "x")
	cases := map[int]map[string][]string{
		0: {
			"score":                    {"score", "--gold", gold, "--run", pass},
			"gate passes":              {"score", "--gold", gold, "--run", pass, "--criteria", criteria},
			"regression not checked":   {"score", "--gold", gold, "--run", pass, "--criteria", onlyRegression},
			"history without an alert": {"history", "--history", hist},
		},
		1: {
			"gate fails":             {"score", "--gold", gold, "--run", fail, "--criteria", criteria},
			"history alert":          {"history", "--history", hist, "--criteria", criteria, "--fail-on-alert"},
			"re-gated summary fails": {"gate", "--summary", filepath.Join(hist, mustOneEntry(t, hist, 1)), "--criteria", criteria},
		},
		2: {
			"unknown flag":                {"score", "--gold", gold, "--run", pass, "--frobnicate"},
			"missing flag":                {"score", "--gold", gold},
			"conflicting flags":           {"score", "--gold", gold, "--run", pass, "-q"},
			"missing input":               {"score", "--gold", filepath.Join(dir, "nope.qrels"), "--run", pass},
			"malformed input":             {"score", "--gold", gold, "--run", write(t, dir, "bad.trec", "q1 Q0 d1 x 1 t\n")},
			"truncated input":             {"gate", "--summary", truncated, "--criteria", criteria},
			"other gold set":              {"score", "--gold", gold, "--run", pass, "--criteria", criteria, "--baseline", otherGold},
			"bad criteria":                {"score", "--gold", gold, "--run", pass, "--criteria", write(t, dir, "bad.yaml", "gates:\n  - name: x\n")},
			"baseline other options":      {"score", "--gold", gold, "--run", pass, "--criteria", criteria, "--baseline", base},
			"history path is a file":      {"score", "--gold", gold, "--run", pass, "--history", afile},
			"history entry not a summary": {"history", "--history", badHist},
			"output replaces an input":    {"score", "--gold", gold, "--run", pass, "-o", gold},
			"output cannot be created":    {"score", "--gold", gold, "--run", pass, "-o", "/proc/evalgate-exit-code-test"},
		},
		3: {
			"queue unreachable": {"run", "--nats", "nats://127.0.0.1:1", "--wait-server", "0", "--gold", gold, "--run", pass},
		},
	}
	table := readmeExitCodes(t)
	if fi, err := os.Stat("/proc"); err != nil || !fi.IsDir() {
		delete(cases[2], "output cannot be created") // a directory nobody can create files in
	}
	for _, code := range slices.Sorted(maps.Keys(table)) {
		if len(cases[code]) == 0 {
			t.Errorf("README exit code %d (%s): no command here exits with it", code, table[code])
		}
	}
	for code, cmds := range cases {
		if _, ok := table[code]; !ok {
			t.Errorf("exit code %d is not in the README's table", code)
		}
		for name, args := range cmds {
			if got, out, errs := evalgate(t, args...); got != code {
				t.Errorf("%s: exit %d, want %d (%s)\n%s\n%s", name, got, code, table[code], out, errs)
			}
		}
	}
}

// mustOneEntry returns the name of the i-th history entry of dir.
func mustOneEntry(t *testing.T, dir string, i int) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) <= i {
		t.Fatalf("history %s: %d entries, %v", dir, len(ents), err)
	}
	return ents[i].Name()
}
