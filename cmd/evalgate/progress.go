package main

import (
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/coordinator"
)

const (
	// progressRedraw is the least time between two redraws of the bar.
	progressRedraw = 100 * time.Millisecond
	// progressEvery is the least time between two progress lines off a
	// terminal (the first and the last are always written).
	progressEvery = 10 * time.Second
	// progressBarWidth is the width of the bar between its brackets.
	progressBarWidth = 20
)

// progressReporter shows a job's progress on stderr: a one-line bar on a
// terminal, structured log lines at intervals elsewhere. In cluster mode
// it also announces the job id and how to resume the job, whatever the
// progress mode and the log level: without it a crashed coordinator's job
// cannot be resumed.
type progressReporter struct {
	w     io.Writer      // the terminal, for the bar
	bar   bool           // draw the bar on w
	lines bool           // write progress lines to log
	log   zerolog.Logger // progress lines
	info  zerolog.Logger // lines shown even at --log-level warn

	resumeURLs string // set in cluster mode: announce the job
	announced  bool
	drawn      bool
	last       time.Time
	started    time.Time
}

// newProgress makes the reporter for --progress mode: "auto" draws the
// bar on a terminal and otherwise writes progress lines at info level
// (shown with --log-level info); "on" draws the bar on a terminal and
// otherwise writes the lines whatever the log level (JSON unless
// --log-format console); "off" shows nothing.
func newProgress(mode string, w io.Writer, log zerolog.Logger) (*progressReporter, error) {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = isatty.IsTerminal(f.Fd())
	}
	return newProgressFor(mode, tty, w, log)
}

func newProgressFor(mode string, tty bool, w io.Writer, log zerolog.Logger) (*progressReporter, error) {
	info := log
	if log.GetLevel() > zerolog.InfoLevel {
		info = log.Level(zerolog.InfoLevel)
	}
	p := &progressReporter{w: w, log: log, info: info, started: time.Now()}
	switch mode {
	case "auto":
		p.bar, p.lines = tty, !tty
	case "on":
		p.bar, p.lines = tty, !tty
		p.log = info
	case "off":
	default:
		return nil, usagef("--progress %q: want auto, on or off", mode)
	}
	return p, nil
}

// announceResume makes the reporter name the job, once known, with the
// command that resumes it on the server at urls (--nats).
func (p *progressReporter) announceResume(urls string) { p.resumeURLs = urls }

func (p *progressReporter) update(pr coordinator.Progress) {
	if pr.Job != "" && p.resumeURLs != "" && !p.announced {
		p.announced = true
		p.info.Info().Str("job", pr.Job).
			Str("resume", fmt.Sprintf("evalgate run --nats %s --resume %s", withoutUserInfo(p.resumeURLs), pr.Job)).
			Msg("job started; if this coordinator stops before the end, resume the job with the same credentials")
	}
	final := pr.Tasks > 0 && pr.TasksDone >= pr.Tasks
	switch {
	case p.bar:
		if !p.drawn || final || time.Since(p.last) >= progressRedraw {
			p.last, p.drawn = time.Now(), true
			fmt.Fprintf(p.w, "\r%s\x1b[K", progressLine(pr, time.Since(p.started)))
		}
	case p.lines:
		if p.last.IsZero() || final || time.Since(p.last) >= progressEvery {
			p.last = time.Now()
			p.logLine(pr)
		}
	}
}

func (p *progressReporter) logLine(pr coordinator.Progress) {
	e := p.log.Info().Str("job", pr.Job).Int("tasks_done", pr.TasksDone).Int("tasks", pr.Tasks).
		Int64("queries_done", pr.QueriesDone).Int64("queries", pr.Queries)
	if pr.Queries > 0 {
		e = e.Int("percent", percent(pr.QueriesDone, pr.Queries))
	}
	e.Float64("queries_per_s", math.Round(rate(pr.QueriesDone, time.Since(p.started))*10)/10).
		Int("workers", pr.Workers).Bool("waiting_for_workers", pr.Waiting).Msg("progress")
}

// finish clears the bar, so that what follows starts on a clean line.
func (p *progressReporter) finish() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

// progressLine renders the bar's line. The percentage and the bar are the
// share of queries scored, the count next to them is in queries, and the
// tasks (parts of shards, the units of work) are labelled as such.
func progressLine(pr coordinator.Progress, elapsed time.Duration) string {
	var b strings.Builder
	r := rate(pr.QueriesDone, elapsed)
	if pr.Queries > 0 {
		pct := percent(pr.QueriesDone, pr.Queries)
		fill := pct * progressBarWidth / 100
		fmt.Fprintf(&b, "%3d%% [%s%s] %d/%d queries", pct, strings.Repeat("=", fill),
			strings.Repeat(" ", progressBarWidth-fill), pr.QueriesDone, pr.Queries)
	} else {
		fmt.Fprintf(&b, "reading inputs: %d queries scored", pr.QueriesDone)
	}
	fmt.Fprintf(&b, ", tasks %d/%s, %.0f queries/s", pr.TasksDone, countOrQ(pr.Tasks), r)
	if left := pr.Queries - pr.QueriesDone; pr.Queries > 0 && left > 0 && r > 0 {
		if eta := time.Duration(float64(left) / r * float64(time.Second)).Round(time.Second); eta > 0 {
			fmt.Fprintf(&b, ", ETA %s", eta)
		}
	}
	if pr.Waiting {
		b.WriteString(", waiting for workers")
	}
	return b.String()
}

// percent is done/total in whole percent, rounded down and at most 100.
func percent(done, total int64) int {
	return int(min(max(done, 0), total) * 100 / total)
}

func rate(n int64, d time.Duration) float64 { return float64(n) / max(d.Seconds(), 1e-9) }

func countOrQ(n int) string {
	if n == 0 {
		return "?"
	}
	return fmt.Sprint(n)
}

// withoutUserInfo drops credentials from comma-separated server URLs, so
// that they are not printed: the user passes them as before.
func withoutUserInfo(urls string) string {
	parts := strings.Split(urls, ",")
	for i, s := range parts {
		if u, err := url.Parse(strings.TrimSpace(s)); err == nil && u.User != nil {
			u.User = nil
			parts[i] = u.String()
		}
	}
	return strings.Join(parts, ",")
}
