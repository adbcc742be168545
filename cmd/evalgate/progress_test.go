package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/internal/embedded"
	"github.com/evalgate/evalgate/summary"
)

// TestProgressBarAcrossPhases feeds the bar what a job reports — queries
// scored while the total is still unknown, then the total — and checks
// the bar: its percentage and count agree (an indeterminate bar given a
// maximum later kept a wrapped-around counter and showed 57% next to
// 1717/2000), it counts queries, labels the tasks as tasks, and is
// cleared at the end.
func TestProgressBarAcrossPhases(t *testing.T) {
	var buf bytes.Buffer
	p, err := newProgressFor("auto", true, &buf, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	p.redraw = 0 // draw every update, to check each
	for i := 0; i <= 14; i++ {
		pr := coordinator.Progress{Job: "j", TasksDone: i, QueriesDone: int64(i) * 2000 / 14}
		if i >= 9 { // every task published: the totals are known
			pr.Tasks, pr.Queries = 14, 2000
		}
		p.update(pr)
		if i == 12 { // the audit's moment: 12 of 14 tasks, 1714 of 2000 queries
			st := p.det.State()
			if st.Max != 2000 || st.CurrentNum != 1714 || st.CurrentPercent != float64(1714)/2000 {
				t.Fatalf("bar state %+v, want 1714 of 2000 queries", st)
			}
			if line := p.det.String(); !strings.Contains(line, "tasks 12/14") || !strings.Contains(line, "1714/2000") ||
				!strings.Contains(line, "queries/s") {
				t.Errorf("bar drawn as %q", line)
			}
		}
		if i == 3 && (p.det != nil || p.spin == nil || !strings.Contains(p.spin.String(), "reading inputs, tasks 3/?")) {
			t.Errorf("while the inputs are read: spinner %v, bar %v", p.spin, p.det)
		}
	}
	// With the throttle on, the first frame of each bar shows the value
	// given with it, not a stale one.
	var tb bytes.Buffer
	q, _ := newProgressFor("auto", true, &tb, zerolog.Nop())
	q.update(coordinator.Progress{Job: "j", TasksDone: 71, QueriesDone: 165616})
	q.update(coordinator.Progress{Job: "j", TasksDone: 87, Tasks: 96, Queries: 200000, QueriesDone: 190000})
	if !strings.Contains(tb.String(), "(165616/-") || !strings.Contains(tb.String(), " 95% ") || !strings.Contains(tb.String(), "(190000/200000") {
		t.Errorf("first frames are stale: %q", tb.String())
	}
	q.finish()
	if p.det.State().CurrentNum != 2000 {
		t.Errorf("finished job at %d of 2000 queries", p.det.State().CurrentNum)
	}
	p.finish()
	if !strings.Contains(buf.String(), "%") || strings.Contains(buf.String(), "secret") {
		t.Errorf("output %q", buf.String())
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
