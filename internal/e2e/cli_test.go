package e2e

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// TestRunTimeoutBoundsWaitingForServer: `run --nats URL --timeout 2s`
// against a server that does not answer — nothing listening, or a listener
// that never speaks NATS — gives up within the timeout (plus a margin for
// one connection attempt), not after --wait-server's minute, and says it
// timed out.
func TestRunTimeoutBoundsWaitingForServer(t *testing.T) {
	gold, run := genData(t, 50, schema.FormatTREC, false)
	refused, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedAddr := refused.Addr().String()
	refused.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	go func() { // accept and hold connections without a word
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	const timeout = 2 * time.Second
	// One connection attempt (2s) and process start, with room for a loaded
	// CI machine; still far below the minute of --wait-server.
	const margin = 10 * time.Second
	for name, addr := range map[string]string{"refused": refusedAddr, "silent": silent.Addr().String()} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), timeout+20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, evalgateBin, "run", "--nats", "nats://"+addr, "--gold", gold, "--run", run,
				"--timeout", timeout.String(), "--progress", "off")
			var errb bytes.Buffer
			cmd.Stderr = &errb
			start := time.Now()
			err := cmd.Run()
			took := time.Since(start)
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 3 {
				t.Fatalf("exit: %v after %s, want code 3\n%s", err, took, errb.String())
			}
			if took > timeout+margin {
				t.Fatalf("gave up after %s, want at most --timeout %s + %s", took, timeout, margin)
			}
			if !strings.Contains(errb.String(), "timed out after 2s") {
				t.Errorf("stderr does not say it timed out:\n%s", errb.String())
			}
		})
	}
}
