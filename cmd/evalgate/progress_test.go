package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/internal/embedded"
	"github.com/evalgate/evalgate/summary"
)

var (
	linePercent = regexp.MustCompile(`^\s*(\d+)% \[(=*) *\] (\d+)/(\d+) queries, tasks (\d+)/(\d+|\?)`)
)

// checkLine checks that a rendered line's percentage, bar and count agree
// with each other and with pr.
func checkLine(t *testing.T, line string, pr coordinator.Progress) {
	t.Helper()
	m := linePercent.FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("line %q does not have the form 'NN%% [===  ] done/total queries, tasks d/n'", line)
	}
	pct, _ := strconv.Atoi(m[1])
	done, _ := strconv.ParseInt(m[3], 10, 64)
	total, _ := strconv.ParseInt(m[4], 10, 64)
	if done != pr.QueriesDone || total != pr.Queries {
		t.Errorf("line %q counts %d/%d queries, want %d/%d", line, done, total, pr.QueriesDone, pr.Queries)
	}
	if want := int(min(done, total) * 100 / total); pct != want {
		t.Errorf("line %q: %d%% next to %d/%d (%d%%)", line, pct, done, total, want)
	}
	if want := pct * progressBarWidth / 100; len(m[2]) != want {
		t.Errorf("line %q: bar %d/%d full at %d%%", line, len(m[2]), progressBarWidth, pct)
	}
	if m[5] != strconv.Itoa(pr.TasksDone) || m[6] != countOrQ(pr.Tasks) {
		t.Errorf("line %q: tasks %s/%s, want %d/%s", line, m[5], m[6], pr.TasksDone, countOrQ(pr.Tasks))
	}
}

// TestProgressLine: the percentage, the bar and the count are all in
// queries, and the tasks are labelled as tasks.
func TestProgressLine(t *testing.T) {
	for _, pr := range []coordinator.Progress{
		{Job: "j", Tasks: 14, TasksDone: 12, Queries: 2000, QueriesDone: 1717}, // the audit's 57% next to 1717/2000
		{Job: "j", Tasks: 14, TasksDone: 0, Queries: 2000, QueriesDone: 0},
		{Job: "j", Tasks: 14, TasksDone: 14, Queries: 2000, QueriesDone: 2000},
		{Job: "j", Tasks: 3, TasksDone: 1, Queries: 7, QueriesDone: 1},
		{Job: "j", Tasks: 3, TasksDone: 3, Queries: 7, QueriesDone: 9}, // never above 100%
	} {
		line := progressLine(pr, 10*time.Second)
		checkLine(t, line, pr)
	}
	line := progressLine(coordinator.Progress{Job: "j", TasksDone: 5, QueriesDone: 1717, Waiting: true}, 10*time.Second)
	if strings.Contains(line, "%") || !strings.Contains(line, "1717 queries scored") || !strings.Contains(line, "tasks 5/?") ||
		!strings.Contains(line, "waiting for workers") {
		t.Errorf("line while the inputs are read: %q", line)
	}
	line = progressLine(coordinator.Progress{Tasks: 4, TasksDone: 2, Queries: 1000, QueriesDone: 500}, 10*time.Second)
	if !strings.Contains(line, "50 queries/s") || !strings.Contains(line, "ETA 10s") {
		t.Errorf("rate and ETA: %q", line)
	}
}

// TestProgressBarAcrossPhases feeds the bar what a job reports — queries
// scored while the total is still unknown, then the total — and checks
// every line drawn. (The previous bar kept a wrapped-around counter from
// its unknown-length phase, which showed 57% next to 1717/2000.)
func TestProgressBarAcrossPhases(t *testing.T) {
	var buf bytes.Buffer
	p, err := newProgressFor("auto", true, &buf, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	var last coordinator.Progress
	for i := 0; i <= 14; i++ {
		pr := coordinator.Progress{Job: "j", TasksDone: i, QueriesDone: int64(i) * 2000 / 14}
		if i >= 9 { // every task published: the totals are known
			pr.Tasks, pr.Queries = 14, 2000
		}
		p.update(pr)
		last = pr
	}
	p.finish()
	frames := strings.Split(buf.String(), "\r")
	var drawn []string
	for _, f := range frames {
		if f = strings.TrimSuffix(f, "\x1b[K"); f != "" {
			drawn = append(drawn, f)
		}
	}
	if len(drawn) < 2 {
		t.Fatalf("drew %d lines: %q", len(drawn), buf.String())
	}
	checkLine(t, drawn[len(drawn)-1], last)
	if !strings.HasPrefix(drawn[len(drawn)-1], "100% [") {
		t.Errorf("finished job drawn as %q", drawn[len(drawn)-1])
	}
	if !strings.HasSuffix(buf.String(), "\r\x1b[K") {
		t.Error("finish did not clear the bar")
	}
}

func TestWithoutUserInfo(t *testing.T) {
	got := withoutUserInfo("nats://alice:s3cret@a:4222,nats://t0ken@b:4222,nats://c:4222")
	if want := "nats://a:4222,nats://b:4222,nats://c:4222"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestRunClusterModeNamesTheJob: `run --nats` off a terminal, at the
// default log level, names its job on stderr with the command that
// resumes it, and keeps stdout for the summary; with --progress on it
// adds JSON progress lines, the last one complete.
func TestRunClusterModeNamesTheJob(t *testing.T) {
	srv, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	dir := t.TempDir()
	g, r := write(t, dir, "g.qrels", goldQrels), write(t, dir, "r.trec", runTREC)
	url := strings.Replace(srv.ClientURL(), "nats://", "nats://someone:secret@", 1) // not to be echoed

	for _, progress := range []string{"auto", "on"} {
		code, out, errs := evalgate(t, "run", "--nats", url, "--workers", "2", "--gold", g, "--run", r, "-m", "RR",
			"-f", "json", "--progress", progress)
		if code != 0 {
			t.Fatalf("--progress %s: exit %d:\n%s", progress, code, errs)
		}
		s, err := summary.ReadJSON(strings.NewReader(out))
		if err != nil {
			t.Fatalf("--progress %s: stdout is not just the summary: %v\n%s", progress, err, out)
		}
		job := s.Execution.Job
		if job == "" {
			t.Fatal("the summary names no job")
		}
		var announced bool
		var lastProgress map[string]any
		for _, line := range strings.Split(strings.TrimSpace(errs), "\n") {
			if line == "" {
				continue
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatalf("--progress %s: stderr line is not JSON: %q", progress, line)
			}
			if rec["job"] == job && rec["resume"] == "evalgate run --nats "+srv.ClientURL()+" --resume "+job {
				announced = true
			}
			if rec["message"] == "progress" {
				lastProgress = rec
			}
		}
		if !announced {
			t.Errorf("--progress %s: stderr does not name job %s with its resume command:\n%s", progress, job, errs)
		}
		if strings.Contains(errs, "secret") {
			t.Errorf("--progress %s: stderr shows the URL's password:\n%s", progress, errs)
		}
		switch {
		case progress == "auto" && lastProgress != nil:
			t.Errorf("progress lines at --log-level warn with --progress auto:\n%s", errs)
		case progress == "on" && lastProgress == nil:
			t.Errorf("no progress line with --progress on:\n%s", errs)
		case progress == "on":
			if lastProgress["tasks_done"] != lastProgress["tasks"] || lastProgress["queries_done"] != float64(2) ||
				lastProgress["percent"] != float64(100) || lastProgress["job"] != job {
				t.Errorf("last progress line %v, want the finished job", lastProgress)
			}
		}
	}
}
