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
	"github.com/schollz/progressbar/v3"

	"github.com/evalgate/evalgate/coordinator"
)

const (
	// progressRedraw is the least time between two redraws of the bar.
	progressRedraw = 100 * time.Millisecond
	// progressEvery is the least time between two progress lines off a
	// terminal (the first and the last are always written).
	progressEvery = 10 * time.Second
	// progressBarWidth is the width of the bar.
	progressBarWidth = 20
)

// progressReporter shows a job's progress on stderr: a bar on a terminal
// (github.com/schollz/progressbar), structured log lines at intervals
// elsewhere. In cluster mode it also announces the job id and how to
// resume the job, whatever the progress mode and the log level: without
// it a crashed coordinator's job cannot be resumed.
//
// The bar counts queries. While the inputs are still read the total is
// unknown and a spinner counts the queries scored; once it is known a
// new, determinate bar takes over. (Changing an indeterminate bar's
// maximum keeps the spinner's wrapped counter, whose percentage then
// disagrees with the count: "57% (1717/2000)".)
type progressReporter struct {
	w     io.Writer      // the terminal, for the bar
	bar   bool           // draw the bar on w
	lines bool           // write progress lines to log
	log   zerolog.Logger // progress lines
	info  zerolog.Logger // lines shown even at --log-level warn

	spin   *progressbar.ProgressBar // while the total is unknown
	det    *progressbar.ProgressBar // once it is known
	redraw time.Duration            // least time between two redraws

	resumeURLs string // set in cluster mode: announce the job
	announced  bool
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
	p := &progressReporter{w: w, log: log, info: info, started: time.Now(), redraw: progressRedraw}
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
		p.draw(pr)
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

// draw updates the bar: a spinner while the number of queries is
// unknown, then a determinate bar, both counting queries scored.
func (p *progressReporter) draw(pr coordinator.Progress) {
	desc := fmt.Sprintf("tasks %d/%s", pr.TasksDone, countOrQ(pr.Tasks))
	if pr.Waiting {
		desc += ", waiting for workers"
	}
	// The rate and the time left are the job's own, since it started: the
	// library's would start with the determinate bar, which begins with
	// thousands of queries already scored, and report absurd rates.
	r := rate(pr.QueriesDone, time.Since(p.started))
	if pr.QueriesDone > 0 {
		desc += fmt.Sprintf(", %.0f queries/s", r)
		if left := pr.Queries - pr.QueriesDone; pr.Queries > 0 && left > 0 {
			desc += ", " + (time.Duration(float64(left) / r * float64(time.Second))).Round(time.Second).String() + " left"
		}
	}
	opts := func(desc string) []progressbar.Option {
		return []progressbar.Option{
			progressbar.OptionSetWriter(p.w), progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(false), progressbar.OptionThrottle(p.redraw),
			progressbar.OptionClearOnFinish(), progressbar.OptionSetWidth(progressBarWidth),
			// No ticker goroutine for the spinner (it turns at each
			// update): the library's Clear does not take the lock that
			// goroutine renders under, and the goroutine outlives Exit.
			progressbar.OptionSetSpinnerChangeInterval(0),
		}
	}
	if pr.Queries <= 0 {
		if p.spin == nil {
			p.spin = progressbar.NewOptions64(-1, opts("reading inputs, "+desc)...)
		}
		// The value first: Describe renders too, and a stale frame drawn
		// first would stay until the throttle lets the next one through.
		_ = p.spin.Set64(pr.QueriesDone)
		p.spin.Describe("reading inputs, " + desc)
		return
	}
	if p.det == nil {
		if p.spin != nil {
			_ = p.spin.Clear()
			_ = p.spin.Exit()
		}
		p.det = progressbar.NewOptions64(pr.Queries, opts(desc)...)
	}
	if p.det.GetMax64() != pr.Queries {
		p.det.ChangeMax64(pr.Queries) // determinate to determinate: safe
	}
	_ = p.det.Set64(min(pr.QueriesDone, pr.Queries))
	p.det.Describe(desc)
}

// finish clears the bar, so that what follows starts on a clean line.
func (p *progressReporter) finish() {
	for _, b := range []*progressbar.ProgressBar{p.spin, p.det} {
		if b != nil {
			_ = b.Clear()
			_ = b.Exit()
		}
	}
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
