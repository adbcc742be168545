package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every error about a file names it, and says what is wrong precisely: a
// baseline from another gold set, a truncated summary (with the byte
// offset), a gzip stream that ends early or has data after it, CR-only
// line ends.
func TestErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	gold, criteria := writeGold(t, dir), write(t, dir, "criteria.yaml", seedCriteria)
	run := writeRun(t, dir, "run.trec", 80, 8)
	other := filepath.Join(dir, "other.json")
	if code, _, errs := evalgate(t, "score", "--gold", write(t, dir, "o.qrels", "q000 0 rel 1\n"), "--run", run, "--summary-out", other); code != 0 {
		t.Fatal(errs)
	}
	full, _ := os.ReadFile(other)
	truncated := write(t, dir, "truncated.json", string(full[:200]))
	runText, _ := os.ReadFile(run)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(runText)
	zw.Close()
	cut := write(t, dir, "cut.trec.gz", gz.String()[:gz.Len()/2])
	trailing := write(t, dir, "trailing.trec.gz", gz.String()+"# appended\n")
	cr := write(t, dir, "cr.trec", strings.ReplaceAll(string(runText), "\n", "\r"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"score", "--gold", gold, "--run", run, "--criteria", criteria, "--baseline", other},
			other + ": gate: the baseline was scored on a different gold set"},
		{[]string{"gate", "--summary", truncated, "--criteria", criteria},
			truncated + ":" + lineCol(full[:200]) + ": corrupt or truncated file: the JSON ends early, at byte 200 of 200, inside a value (a truncated file?)"},
		{[]string{"score", "--gold", gold, "--run", run, "--criteria", criteria, "--baseline", truncated},
			truncated + ":" + lineCol(full[:200]) + ": corrupt or truncated file: the JSON ends early, at byte 200"},
		{[]string{"score", "--gold", gold, "--run", cut}, cut + ": corrupt or truncated file: the gzip stream ends early"},
		{[]string{"score", "--gold", gold, "--run", trailing},
			trailing + ": corrupt or truncated file: trailing data after the gzip stream, at byte " + itoa(gz.Len())},
		{[]string{"score", "--gold", gold, "--run", cr}, cr + ":1: unsupported line ends: line ends are CR only (classic Mac); convert to LF"},
	} {
		code, out, errs := evalgate(t, tc.args...)
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d\n%s\nwant %s", tc.args[len(tc.args)-1], code, errs, tc.want)
		}
	}
}

// lineCol is the line:column just after the end of b.
func lineCol(b []byte) string {
	line := bytes.Count(b, []byte{'\n'}) + 1
	col := len(b) - (bytes.LastIndexByte(b, '\n') + 1) + 1
	return itoa(line) + ":" + itoa(col)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// "Try: evalgate --help" follows usage errors (flags), and only them: a
// file that is missing, malformed or cannot be written is not fixed by
// reading the help.
func TestHelpHintOnlyForUsageErrors(t *testing.T) {
	dir := t.TempDir()
	gold, run := writeGold(t, dir), writeRun(t, dir, "run.trec", 80, 8)
	criteria := write(t, dir, "criteria.yaml", seedCriteria)
	for _, args := range [][]string{
		{"score", "--gold", gold, "--run", run, "--frobnicate"},
		{"score", "--gold", gold},
		{"score", "--gold", gold, "--run", run, "--rel-level", "-1"},
		{"score", "--gold", gold, "--run", run, "--format", "xml"},
		{"compare", "--gold", gold, "--run", run, "--run", run, "--name", "a"},
	} {
		if code, _, errs := evalgate(t, args...); code != 2 || !strings.HasSuffix(errs, "Try: evalgate --help\n") {
			t.Errorf("%v: exit %d, no hint:\n%s", args, code, errs)
		}
	}
	for _, args := range [][]string{
		{"score", "--gold", filepath.Join(dir, "nope.qrels"), "--run", run},
		{"score", "--gold", gold, "--run", run, "--criteria", filepath.Join(dir, "nope.yaml")},
		{"score", "--gold", gold, "--run", run, "--criteria", criteria, "--baseline", filepath.Join(dir, "nope.json")},
		{"score", "--gold", gold, "--run", run, "--summary-out", dir},
		{"score", "--gold", gold, "--run", run, "-o", gold},
		{"score", "--gold", gold, "--run", write(t, dir, "bad.trec", "q1 Q0 d1 1 x t\n")},
		{"history", "--history", filepath.Join(dir, "nope")},
		{"gate", "--summary", filepath.Join(dir, "nope.json"), "--criteria", criteria},
	} {
		if code, _, errs := evalgate(t, args...); code != 2 || strings.Contains(errs, "Try:") || !strings.HasPrefix(errs, "Error: ") {
			t.Errorf("%v: exit %d:\n%s", args, code, errs)
		}
	}
}

// run prints its fatal error once: one JSON log line when the log is JSON
// (--log-format json, or auto off a terminal), one "Error:" line on the
// console; the coordinator does not log it a second time.
func TestRunFatalErrorOnce(t *testing.T) {
	dir := t.TempDir()
	gold := writeGold(t, dir)
	bad := write(t, dir, "bad.trec", "q000 Q0 d1 1 x t\n")
	for _, format := range []string{"json", "auto"} {
		code, out, errs := evalgate(t, "--log-format", format, "run", "--gold", gold, "--run", bad)
		lines := strings.Split(strings.TrimSpace(errs), "\n")
		var line struct {
			Level    string `json:"level"`
			Error    string `json:"error"`
			ExitCode int    `json:"exit_code"`
		}
		if code != 2 || out != "" || len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &line) != nil ||
			line.Level != "error" || line.ExitCode != 2 || !strings.Contains(line.Error, bad+":1:14: field \"score\"") {
			t.Errorf("--log-format %s: exit %d\n%s", format, code, errs)
		}
	}
	code, _, errs := evalgate(t, "--log-format", "console", "run", "--gold", gold, "--run", bad)
	if code != 2 || strings.Count(errs, bad+":1:14") != 1 || strings.Contains(errs, "job failed") || !strings.HasPrefix(errs, "Error: bad input:\n") {
		t.Errorf("console: exit %d\n%s", code, errs)
	}
}
