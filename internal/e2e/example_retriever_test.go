package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	exampleOnce sync.Once
	exampleBin  string
	exampleErr  error
)

// exampleRetriever builds the example BM25 service (examples/retriever, a
// module of its own) once per test binary.
func exampleRetriever(t *testing.T) string {
	t.Helper()
	exampleOnce.Do(func() {
		_, here, _, _ := runtime.Caller(0)
		dir := filepath.Join(filepath.Dir(here), "..", "..", "examples", "retriever")
		exampleBin = filepath.Join(filepath.Dir(evalgateBin), "retriever")
		build := exec.Command("go", "build", "-o", exampleBin, ".")
		build.Dir = dir
		if out, err := build.CombinedOutput(); err != nil {
			exampleErr = fmt.Errorf("build the example retriever: %v\n%s", err, out)
		}
	})
	if exampleErr != nil {
		t.Fatal(exampleErr)
	}
	return exampleBin
}

// startExampleRetriever serves corpus with the example service on a free
// port and returns its URL; the service stops with the test.
func startExampleRetriever(t *testing.T, corpus string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(exampleRetriever(t), "--corpus", corpus, "--listen", addr)
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("retriever log:\n%s", log.String())
		}
	})
	url := "http://" + addr
	waitFor(t, 2*time.Minute, "the example retriever to index its corpus", func() bool {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return url
}

// TestExampleRetrieverLive: against the real BM25 service of
// examples/retriever, both strategies through the queue (embedded server,
// workers) give what `score` gives on their saved runs, and compared
// through the queue the candidate beats the baseline, as the example's
// README says.
func TestExampleRetrieverLive(t *testing.T) {
	dir := t.TempDir()
	if _, errs, code := cli(t, "gen", "--corpus", "--queries", "300", "--tags", "--seed", "3", "--out", dir); code != 0 {
		t.Fatalf("gen --corpus: %s", errs)
	}
	gold := filepath.Join(dir, "gold.jsonl")
	t.Setenv("RETRIEVER_URL", startExampleRetriever(t, filepath.Join(dir, "corpus.jsonl")))
	files, err := filepath.Abs("../../examples/retriever")
	if err != nil {
		t.Fatal(err)
	}
	recall := map[string]float64{}
	for _, mode := range []string{"baseline", "candidate"} {
		saved := filepath.Join(dir, mode+".jsonl")
		out, errs, code := cli(t, "run", "--gold", gold, "--retriever", filepath.Join(files, mode+".yaml"), "--workers", "2",
			"--save-run", saved, "--format", "json", "-m", "R@10,nDCG@10,RR", "--progress", "off")
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", mode, code, errs)
		}
		replay, errs, code := cli(t, "score", "--gold", gold, "--run", saved, "--rank-by", "rank", "--format", "json", "-m", "R@10,nDCG@10,RR")
		if code != 0 {
			t.Fatalf("%s replay: exit %d: %s", mode, code, errs)
		}
		live, again := measuresOf(t, out), measuresOf(t, replay)
		if fmt.Sprint(live) != fmt.Sprint(again) {
			t.Fatalf("%s: live %v, replayed %v", mode, live, again)
		}
		recall[mode] = live["R@10"]
	}
	if recall["candidate"] <= recall["baseline"] {
		t.Fatalf("recall@10: candidate %.4f, baseline %.4f", recall["candidate"], recall["baseline"])
	}
}

// measuresOf reads the overall measures of a summary JSON.
func measuresOf(t *testing.T, js string) map[string]float64 {
	t.Helper()
	var s struct {
		Measures []struct {
			Name  string
			Value float64
		}
	}
	if err := json.Unmarshal([]byte(js), &s); err != nil {
		t.Fatalf("%v: %s", err, js)
	}
	out := map[string]float64{}
	for _, m := range s.Measures {
		out[m.Name] = m.Value
	}
	return out
}
