package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"
	"github.com/schollz/progressbar/v3"

	"github.com/evalgate/evalgate/coordinator"
)

// progressReporter shows a job's progress: a bar on a terminal, periodic
// structured log lines otherwise.
type progressReporter struct {
	bar     *progressbar.ProgressBar
	log     zerolog.Logger
	last    time.Time
	started time.Time
	max     int64
}

func newProgress(mode string, w io.Writer, log zerolog.Logger) (*progressReporter, error) {
	p := &progressReporter{log: log, started: time.Now()}
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = isatty.IsTerminal(f.Fd())
	}
	switch mode {
	case "auto":
	case "on":
		tty = true
	case "off":
		return p, nil
	default:
		return nil, usagef("--progress %q: want auto, on or off", mode)
	}
	if tty {
		p.bar = progressbar.NewOptions64(-1,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription("ingesting"),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString("queries"),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSetWidth(30),
		)
	}
	return p, nil
}

func (p *progressReporter) update(pr coordinator.Progress) {
	desc := fmt.Sprintf("job %s: shards %d/%s", pr.Job, pr.TasksDone, countOrQ(pr.Tasks))
	if pr.Waiting {
		desc += " (waiting for workers)"
	}
	if p.bar != nil {
		if pr.Queries > 0 && p.max != pr.Queries {
			p.bar.ChangeMax64(pr.Queries)
			p.max = pr.Queries
		}
		p.bar.Describe(desc)
		_ = p.bar.Set64(pr.QueriesDone)
		return
	}
	if time.Since(p.last) < 5*time.Second && (pr.Tasks == 0 || pr.TasksDone < pr.Tasks) {
		return
	}
	p.last = time.Now()
	rate := float64(pr.QueriesDone) / max(time.Since(p.started).Seconds(), 1e-9)
	p.log.Info().Str("job", pr.Job).Int("shards_done", pr.TasksDone).Int("shards", pr.Tasks).
		Int64("queries_done", pr.QueriesDone).Int64("queries", pr.Queries).Float64("queries_per_s", rate).
		Int("workers", pr.Workers).Bool("waiting_for_workers", pr.Waiting).Msg("progress")
}

func (p *progressReporter) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

func countOrQ(n int) string {
	if n == 0 {
		return "?"
	}
	return fmt.Sprint(n)
}
