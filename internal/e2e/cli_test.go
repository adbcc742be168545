package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalgate/evalgate/schema"
)

func cli(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(evalgateBin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// TestClusterModeGateAndHistory: a coordinator and a worker process on an
// external JetStream server gate a run, keep it in the JetStream history,
// and status and history report on it.
func TestClusterModeGateAndHistory(t *testing.T) {
	gold, run := genData(t, 800, schema.FormatJSONL, true)
	s := startServer(t)
	connect(t, s, "setup")
	workerProc(t, s.ClientURL())
	dir := t.TempDir()
	criteria := filepath.Join(dir, "criteria.yaml")
	os.WriteFile(criteria, []byte("gates:\n  - name: retrieval_recall_at_100\n    threshold: 0.5\n    regression_max: 0.05\n"), 0o644)
	for i := 0; i < 2; i++ {
		out, errs, code := cli(t, "run", "--nats", s.ClientURL(), "--workers", "0", "--gold", gold, "--run", run,
			"--criteria", criteria, "--history", "jetstream", "--progress", "off", "--report", filepath.Join(dir, "report"))
		if code != 0 || !strings.Contains(out, "verdict: PASS (exit code 0)") || !strings.Contains(out, "not checked: no baseline") {
			t.Fatalf("run %d: exit %d\n%s\n%s", i, code, out, errs)
		}
	}
	out, errs, code := cli(t, "history", "--nats", s.ClientURL(), "--history", "jetstream", "--criteria", criteria)
	if code != 0 || !strings.Contains(out, "2 runs") || !strings.Contains(out, "R@100") {
		t.Fatalf("history: exit %d\n%s\n%s", code, out, errs)
	}
	out, errs, code = cli(t, "status", "--nats", s.ClientURL())
	if code != 0 || strings.Count(out, " done ") != 2 || !strings.Contains(out, "workers seen in the last 30s: 1") {
		t.Fatalf("status: exit %d\n%s\n%s", code, out, errs)
	}
}
