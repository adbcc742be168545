package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `score --baseline-run` writes the same summary as the version that
// wrote testdata/paired-golden-*.json (the scalar int128 replicate loop,
// before it was vectorised): every interval bound, p-value and most
// regressed query, byte for byte — JSON numbers are the shortest text
// that reads back as the same float64, so equal bytes are equal bits. A
// synthetic gold set of 2000 queries with tags, and two runs of it that
// differ a little; with all 14 default measures, and with the ship
// criteria (a tag group).
func TestPairedSummaryGolden(t *testing.T) {
	dir := t.TempDir()
	for _, g := range [][]string{
		{"--recall", "0.96", "--rank-decay", "0.36", "--out", filepath.Join(dir, "base")},
		{"--recall", "0.97", "--rank-decay", "0.35", "--out", filepath.Join(dir, "cand")},
	} {
		args := append([]string{"gen", "--queries", "2000", "--depth", "100", "--format", "jsonl", "--tags", "--seed", "7"}, g...)
		if code, _, errs := evalgate(t, args...); code != 0 {
			t.Fatalf("gen: exit %d\n%s", code, errs)
		}
	}
	for _, c := range []struct {
		name string
		args []string
	}{
		{"all", nil},
		{"criteria", []string{"--criteria", filepath.Join("..", "..", "examples", "ship-criteria.yaml")}},
	} {
		args := append([]string{"score", "--gold", filepath.Join(dir, "cand", "gold.jsonl"), "--run", filepath.Join(dir, "cand", "run.jsonl"),
			"--baseline-run", filepath.Join(dir, "base", "run.jsonl"), "--format", "json"}, c.args...)
		code, out, errs := evalgate(t, args...)
		if code != 0 && !(c.name == "criteria" && code == 1) {
			t.Fatalf("%s: exit %d\n%s", c.name, code, errs)
		}
		i := strings.Index(out, `"execution"`)
		if i < 0 {
			t.Fatalf("%s: no execution section:\n%s", c.name, out)
		}
		got := strings.ReplaceAll(out[:i], dir, "DIR")
		path := filepath.Join("testdata", "paired-golden-"+c.name+".json")
		if os.Getenv("EVALGATE_UPDATE_GOLDEN") != "" {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s: summary differs from %s:\n%s", c.name, path, got)
		}
	}
}
