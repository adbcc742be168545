package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalgate/evalgate/internal/embedded"
	"github.com/evalgate/evalgate/summary"
)

// judgedPool is the order the rankings of writeHoledRun rotate through:
// r1, r2 relevant, n1, n2 judged non-relevant, u1 in the gold set but
// unjudged (grade -1), x1..x3 not in it.
var judgedPool = []string{"x1", "n1", "r1", "u1", "x2", "n2", "r2", "x3"}

// writeHoledGold writes 20 tagged queries, each judging r1, r2, n1, n2
// and marking u1 unjudged.
func writeHoledGold(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	for q := 0; q < 20; q++ {
		cat := []string{"legal", "policy"}[q%2]
		fmt.Fprintf(&b, `{"query_id": "q%02d", "relevance_map": {"r1": 1, "r2": 2, "n1": 0, "n2": 0, "u1": -1}, "category": %q}`+"\n", q, cat)
	}
	return write(t, dir, "gold.jsonl", b.String())
}

// writeHoledRun ranks judgedPool rotated by the query's number, and
// returns the file and the unjudged documents in the rankings' top depth
// (0: all).
func writeHoledRun(t *testing.T, dir string, depth int) (string, int64) {
	t.Helper()
	var b strings.Builder
	unjudged := int64(0)
	for q := 0; q < 20; q++ {
		for r := range judgedPool {
			d := judgedPool[(q+r)%len(judgedPool)]
			fmt.Fprintf(&b, "q%02d Q0 %s %d %d t\n", q, d, r+1, 100-r)
			if (depth == 0 || r < depth) && (strings.HasPrefix(d, "x") || d == "u1") {
				unjudged++
			}
		}
	}
	return write(t, dir, "run.trec", b.String()), unjudged
}

// score and run (two workers, many shards) give the same summary with
// bpref and --judged-only, overall and per tag; the summary records the
// option and the unjudged documents dropped after the depth cut; a gate on
// bpref renders in the comment and JUnit.
func TestJudgedOnlyRunEqualsScore(t *testing.T) {
	srv, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	dir := t.TempDir()
	gold := writeHoledGold(t, dir)
	run, unjudged := writeHoledRun(t, dir, 6)
	args := []string{"--gold", gold, "--run", run, "-m", "bpref,P@3,AP,nDCG@5,RR,NumRet", "--judged-only", "--depth", "6", "-f", "json"}
	code, out, errs := evalgate(t, append([]string{"score"}, args...)...)
	if code != 0 {
		t.Fatalf("score: exit %d\n%s", code, errs)
	}
	local := comparableJSON(t, out)
	code, out, errs = evalgate(t, append([]string{"run", "--nats", srv.ClientURL(), "--workers", "2", "--shards", "7", "--progress", "off"}, args...)...)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	if dist := comparableJSON(t, out); dist != local {
		t.Fatalf("run's summary differs from score's:\n%s\nwant\n%s", dist, local)
	}
	s, err := summary.ReadJSON(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if !s.Config.JudgedOnly || s.Counts.UnjudgedDropped != unjudged || s.Counts.DepthTruncated != 20*2 {
		t.Fatalf("config %+v, counts %+v: want judged_only and %d unjudged dropped", s.Config, s.Counts, unjudged)
	}
	if len(s.Groups) != 2 || s.Groups[0].Measures[0].Name != "Bpref" || s.Measures[0].TRECName != "bpref" {
		t.Fatalf("groups %+v", s.Groups)
	}
	// NumRet counts the condensed rankings: the depth's 6 minus the unjudged.
	if got, want := s.Measures[5].Value, float64(20*6-unjudged); got != want {
		t.Fatalf("NumRet = %v, want %v", got, want)
	}

	criteria := write(t, dir, "c.yaml", "gates:\n  - name: bpref\n    threshold: 0.1\n  - name: legal_bpref\n    metric: bpref\n    tag: category=legal\n    threshold: 0.1\n")
	report := filepath.Join(dir, "report")
	code, out, errs = evalgate(t, "score", "--gold", gold, "--run", run, "-m", "bpref", "--judged-only", "--criteria", criteria, "--report", report)
	if code != 0 {
		t.Fatalf("gate on bpref: exit %d\n%s\n%s", code, out, errs)
	}
	// Every rendering says the rankings were condensed.
	note := fmt.Sprintf("judged documents only (--judged-only): %d unjudged documents dropped from the rankings", writtenUnjudged(t, run))
	comment, err := os.ReadFile(filepath.Join(report, "comment.md"))
	if err != nil || !strings.Contains(string(comment), "| bpref `Bpref` |") || !strings.Contains(string(comment), note) {
		t.Fatalf("comment.md lacks the measure or %q: %v\n%s", note, err, comment)
	}
	page, err := os.ReadFile(filepath.Join(report, "report.html"))
	if err != nil || !strings.Contains(string(page), "Judged documents only (--judged-only)") {
		t.Fatalf("report.html lacks the note: %v", err)
	}
	var junit struct {
		Tests int `xml:"tests,attr"`
		Cases []struct {
			Name string `xml:"name,attr"`
		} `xml:"testsuite>testcase"`
	}
	jb, err := os.ReadFile(filepath.Join(report, "junit.xml"))
	if err != nil || xml.Unmarshal(jb, &junit) != nil || junit.Tests != 2 || junit.Cases[0].Name != "bpref" {
		t.Fatalf("junit.xml: %v\n%s", err, jb)
	}
}

// writtenUnjudged counts the unjudged documents of a run file written by
// writeHoledRun, all ranks.
func writtenUnjudged(t *testing.T, run string) int {
	t.Helper()
	b, err := os.ReadFile(run)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if d := strings.Fields(line)[2]; strings.HasPrefix(d, "x") || d == "u1" {
			n++
		}
	}
	return n
}

func comparableJSON(t *testing.T, out string) string {
	t.Helper()
	s, err := summary.ReadJSON(strings.NewReader(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var b bytes.Buffer
	if err := s.Comparable().WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// A saved baseline scored with --judged-only is refused by a score
// without it (exit 2), naming the option with both values.
func TestBaselineScoredJudgedOnlyRefused(t *testing.T) {
	dir := t.TempDir()
	gold := writeHoledGold(t, dir)
	run, unjudged := writeHoledRun(t, dir, 0)
	criteria := write(t, dir, "c.yaml", "gates:\n  - name: bpref\n    threshold: 0.1\n    regression_max: 0.05\n")
	base := filepath.Join(dir, "base.json")
	if code, _, errs := evalgate(t, "score", "--gold", gold, "--run", run, "-m", "bpref", "--judged-only", "--summary-out", base); code != 0 {
		t.Fatal(errs)
	}
	code, out, errs := evalgate(t, "score", "--gold", gold, "--run", run, "-m", "bpref", "--criteria", criteria, "--baseline", base)
	want := base + ": gate: the baseline was scored with other options: judged_only (--judged-only) true in the baseline, false now"
	if code != 2 || out != "" || !strings.Contains(errs, want) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = evalgate(t, "score", "--gold", gold, "--run", run, "-m", "bpref", "--judged-only", "--criteria", criteria, "--baseline", base)
	note := fmt.Sprintf("judged documents only (--judged-only): %d unjudged documents dropped from the rankings\n", unjudged)
	if code != 0 || !strings.Contains(out, note) {
		t.Fatalf("same options: exit %d\n%s\n%s", code, out, errs)
	}
}
