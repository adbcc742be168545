package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// Every flag of every command says what it does; compare's flags describe
// compare (none speaks of --baseline-run, which compare does not have);
// and each flag a command requires is marked "(required)" and is required.
func TestFlagsDescribed(t *testing.T) {
	app := newApp(io.Discard, io.Discard)
	required := map[string][]string{
		"score": {"gold", "run"}, "run": {"gold", "run"}, "gate": {"summary", "criteria"}, "compare": {"gold"},
		"history": {"history"}, "worker": {"nats"}, "status": {"nats"},
	}
	for _, cmd := range app.Commands {
		usage := map[string]string{}
		for _, f := range cmd.Flags {
			name := f.Names()[0]
			df, ok := f.(cli.DocGenerationFlag)
			if !ok {
				t.Fatalf("%s --%s: %T has no usage", cmd.Name, name, f)
			}
			if hf, ok := f.(interface{ IsVisible() bool }); ok && !hf.IsVisible() {
				continue
			}
			usage[name] = df.GetUsage()
			if strings.TrimSpace(df.GetUsage()) == "" {
				t.Errorf("%s --%s: no description", cmd.Name, name)
			}
			if cmd.Name == "compare" && strings.Contains(df.GetUsage(), "--baseline-run") {
				t.Errorf("compare --%s: %q speaks of --baseline-run", name, df.GetUsage())
			}
		}
		for _, name := range required[cmd.Name] {
			if !strings.Contains(usage[name], "(required") {
				t.Errorf("%s --%s is required, its description does not say so: %q", cmd.Name, name, usage[name])
			}
		}
	}
	for cmd, names := range required {
		code, _, errs := evalgate(t, cmd)
		if code != 2 || !strings.Contains(errs, "flag --"+names[0]+" is required") {
			t.Errorf("%s without flags: exit %d\n%s", cmd, code, errs)
		}
	}
}

// compare names its columns by the runs' base names without extension,
// or by --name; two runs with one base name keep their paths apart.
func TestCompareColumnNames(t *testing.T) {
	dir := t.TempDir()
	gold := writeGold(t, dir)
	a, b := writeRun(t, dir, "prod.trec", 80, 7), writeRun(t, dir, "cand.trec", 60, 10)
	common := []string{"compare", "--gold", gold, "-m", "RR", "--bootstrap", "50", "--permutations", "50"}
	code, out, errs := evalgate(t, append(common, "--run", a, "--run", b)...)
	header := strings.SplitN(out, "\n", 4)
	if code != 0 || !strings.HasPrefix(header[0], "reference: prod (100 queries)") || !strings.Contains(header[2], "prod    cand ") || strings.Contains(out, dir) {
		t.Fatalf("base names: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = evalgate(t, append(common, "--run", a, "--run", b, "--name", "production", "--name", "candidate")...)
	if code != 0 || !strings.Contains(out, "reference: production") || !strings.Contains(out, "candidate") || strings.Contains(out, "cand.trec") {
		t.Fatalf("--name: exit %d\n%s\n%s", code, out, errs)
	}
	sub := filepath.Join(dir, "sub")
	twin := writeRun(t, mkdir(t, sub), "prod.trec", 70, 7)
	code, out, _ = evalgate(t, append(common, "--run", a, "--run", twin)...)
	if code != 0 || !strings.Contains(out, twin) {
		t.Fatalf("same base name: exit %d\n%s", code, out)
	}
	if code, _, errs := evalgate(t, append(common, "--run", a, "--run", b, "--name", "one")...); code != 2 || !strings.Contains(errs, "--name: 1 names for 2 systems") {
		t.Fatalf("--name count: exit %d\n%s", code, errs)
	}
}

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A relevance level below 0 would count judged non-relevant documents as
// relevant: refused.
func TestNegativeRelLevelRefused(t *testing.T) {
	dir := t.TempDir()
	gold, run := writeGold(t, dir), writeRun(t, dir, "run.trec", 80, 8)
	for _, cmd := range []string{"score", "compare"} {
		args := []string{cmd, "--gold", gold, "--run", run, "--rel-level", "-1"}
		if cmd == "compare" {
			args = append(args, "--run", run)
		}
		code, out, errs := evalgate(t, args...)
		if code != 2 || out != "" || !strings.Contains(errs, "--rel-level -1: want 0 or more") {
			t.Errorf("%s: exit %d\n%s", cmd, code, errs)
		}
	}
}
