package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/gate"
	"github.com/evalgate/evalgate/internal/atomicfile"
	"github.com/evalgate/evalgate/internal/jsq"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/summary"
)

// gateFlags are the release-gate flags of score, run and gate.
func gateFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "criteria", Usage: "ship-criteria YAML: gate the result (exit 1 if an error gate fails)"},
		&cli.StringFlag{Name: "baseline", Usage: "a previous summary JSON (--summary-out) to compare with"},
		&cli.BoolFlag{Name: "require-baseline", Usage: "fail (exit 2) instead of noting \"not checked\" when there is no baseline"},
		&cli.BoolFlag{Name: "allow-gold-change", Usage: "accept a baseline scored on a different gold set"},
		&cli.StringFlag{Name: "report", Usage: "write summary.json, comment.md, junit.xml and report.html to this directory"},
		&cli.StringFlag{Name: "comment", Usage: "write the pull-request comment (Markdown) to this file"},
		&cli.StringFlag{Name: "junit", Usage: "write JUnit XML (one test case per gate) to this file"},
		&cli.StringFlag{Name: "html", Usage: "write the self-contained HTML report to this file"},
		&cli.StringFlag{Name: "history", Usage: "keep this result in a history: a directory, or \"jetstream\" (with --nats)"},
	}
}

// pairingFlags configure the comparison with a baseline run.
func pairingFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "baseline-run", Usage: "a baseline run to score in the same job and compare query by query (confidence intervals, p-values)"},
		&cli.StringFlag{Name: "baseline-format", Value: "auto", Usage: "format of --baseline-run"},
		&cli.IntFlag{Name: "bootstrap", Value: 1000, Usage: "bootstrap replicates for confidence intervals (with --baseline-run)"},
		&cli.IntFlag{Name: "permutations", Value: 1000, Usage: "randomization-test permutations for p-values (with --baseline-run)"},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the bootstrap and the randomization test"},
		&cli.IntFlag{Name: "top-regressed", Value: 10, Usage: "most regressed queries to report (with --baseline-run)"},
	}
}

// gating is the release-gate part of a command, prepared before scoring so
// that bad criteria or baselines fail fast.
type gating struct {
	criteria *gate.Criteria
	opts     gate.Options
	report   string
	comment  string
	junit    string
	html     string
	history  string
}

func gatingFromFlags(c *cli.Context, baselineRun bool) (*gating, error) {
	g := &gating{report: c.String("report"), comment: c.String("comment"), junit: c.String("junit"),
		html: c.String("html"), history: c.String("history")}
	if p := c.String("criteria"); p != "" {
		cr, err := gate.LoadCriteria(p)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, usageError{err}
			}
			return nil, err
		}
		g.criteria = cr
	}
	if p := c.String("baseline"); p != "" {
		if baselineRun {
			return nil, usagef("--baseline and --baseline-run: give one baseline")
		}
		s, err := readSummary(p)
		if err != nil {
			return nil, err
		}
		g.opts.Baseline = s
	}
	g.opts.RequireBaseline = c.Bool("require-baseline")
	g.opts.AllowGoldChange = c.Bool("allow-gold-change")
	if g.criteria == nil && (g.opts.Baseline != nil || g.opts.RequireBaseline || g.comment != "" || g.junit != "") {
		return nil, usagef("--baseline, --require-baseline, --comment and --junit need --criteria")
	}
	if g.opts.RequireBaseline && g.opts.Baseline == nil && !baselineRun {
		return nil, usageError{gate.ErrNoBaseline}
	}
	if g.history == "jetstream" && c.String("nats") == "" {
		return nil, usagef("--history jetstream needs --nats")
	}
	if err := checkOutputs(map[string]string{"comment": g.comment, "junit": g.junit, "html": g.html},
		map[string]string{"report": g.report}); err != nil {
		return nil, err
	}
	return g, nil
}

// readSummary reads a saved summary; a malformed one is bad input.
func readSummary(path string) (*summary.Summary, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usageError{fmt.Errorf("open summary %s: %w", path, err)}
	}
	defer f.Close()
	s, err := summary.ReadJSON(f)
	if err != nil {
		return nil, &schema.InputError{File: path, Err: err}
	}
	return s, nil
}

// pairedMetric sets up the job to compare the run with a baseline run:
// the gated measures (all mean measures without criteria) get intervals
// and p-values; gated measures missing from -m are added.
func pairedMetric(c *cli.Context, job *coordinator.Job, cr *gate.Criteria) error {
	if cr != nil {
		for _, m := range cr.Measures() {
			if !slices.Contains(job.Metric.Measures, m) {
				job.Metric.Measures = append(job.Metric.Measures, m)
			}
		}
	}
	job.Metric.CurveDepth = 100
	path := c.String("baseline-run")
	if path == "" {
		return nil
	}
	if _, err := os.Stat(path); err != nil {
		return usageError{fmt.Errorf("open %s: %w", path, err)}
	}
	bf, err := schema.ParseFormat(c.String("baseline-format"))
	if err != nil {
		return usageError{fmt.Errorf("--baseline-format: %w", err)}
	}
	job.Baseline = coordinator.Input{Path: path, Format: bf}
	var pairs []int
	for i, m := range job.Metric.Measures {
		if m.Summed() {
			continue
		}
		if cr == nil || slices.Contains(cr.Measures(), m) {
			pairs = append(pairs, i)
		}
	}
	job.Metric.Paired = true
	job.Metric.Pairing = &metric.Pairing{Measures: pairs, Replicates: c.Int("bootstrap"), Permutations: c.Int("permutations"),
		Seed: c.Uint64("seed"), TopK: c.Int("top-regressed"), Groups: cr.Tags()}
	if err := job.Metric.Pairing.Validate(job.Metric.Measures); err != nil {
		return usageError{err}
	}
	return nil
}

// apply evaluates the criteria (if any) into s.Gate.
func (g *gating) apply(s *summary.Summary) error {
	if g.criteria == nil {
		return nil
	}
	v, err := gate.Evaluate(g.criteria, s, g.opts)
	if err != nil {
		return usageError{err} // every gating error is in the criteria, summaries or flags
	}
	s.Gate = v
	return nil
}

// historyStore opens the history, if asked for.
func (g *gating) historyStore(ctx context.Context, c *cli.Context) (gate.HistoryStore, func(), error) {
	switch g.history {
	case "":
		return nil, func() {}, nil
	case "jetstream":
		conn, err := jsq.Connect(ctx, natsOptions(c, "evalgate-history"))
		if err != nil {
			return nil, nil, err
		}
		return conn.History(), conn.Close, nil
	}
	return gate.DirHistory{Dir: g.history}, func() {}, nil
}

// historyWith loads the history and adds s as its latest entry (in
// place of an earlier recording of the same evaluation), for the reports'
// trend lines. s is recorded only once every output is written.
func historyWith(ctx context.Context, hist gate.HistoryStore, s *summary.Summary) ([]*summary.Summary, error) {
	if hist == nil {
		return nil, nil
	}
	history, err := gate.Load(ctx, hist)
	if err != nil {
		return nil, err
	}
	name := gate.EntryName(s)
	history = slices.DeleteFunc(history, func(h *summary.Summary) bool { return gate.EntryName(h) == name })
	return append(history, s), nil
}

// renderReports renders the report files the flags ask for into files.
// history (oldest first, s last) gives report.html its trend lines.
func (g *gating) renderReports(s *summary.Summary, history []*summary.Summary, files *fileSet) error {
	render := func(path string, fn func(w io.Writer) error) error {
		if path == "" {
			return nil
		}
		var b bytes.Buffer
		if err := fn(&b); err != nil {
			return err
		}
		files.add(path, b.Bytes())
		return nil
	}
	rep := gate.Report{Summary: s, Baseline: g.opts.Baseline, History: history, Criteria: g.criteria}
	comment := func(w io.Writer) error { return gate.WriteComment(w, rep) }
	report := func(w io.Writer) error { return gate.WriteHTML(w, rep) }
	junit := func(w io.Writer) error { return gate.WriteJUnit(w, s.Gate) }
	if g.report != "" {
		files.dirs = append(files.dirs, g.report)
		if err := render(filepath.Join(g.report, "summary.json"), s.WriteJSON); err != nil {
			return err
		}
		if err := render(filepath.Join(g.report, "report.html"), report); err != nil {
			return err
		}
		if s.Gate != nil {
			if err := render(filepath.Join(g.report, "comment.md"), comment); err != nil {
				return err
			}
			if err := render(filepath.Join(g.report, "junit.xml"), junit); err != nil {
				return err
			}
		}
	}
	if err := render(g.html, report); err != nil {
		return err
	}
	if s.Gate != nil {
		if err := render(g.comment, comment); err != nil {
			return err
		}
		if err := render(g.junit, junit); err != nil {
			return err
		}
	}
	return nil
}

// stepSummary appends the pull-request comment to $GITHUB_STEP_SUMMARY
// when set (GitHub Actions).
func (g *gating) stepSummary(s *summary.Summary) error {
	if s.Gate == nil || os.Getenv("GITHUB_STEP_SUMMARY") == "" {
		return nil
	}
	var b bytes.Buffer
	if err := gate.WriteComment(&b, gate.Report{Summary: s, Baseline: g.opts.Baseline}); err != nil {
		return err
	}
	return gate.AppendStepSummary(b.Bytes())
}

// fileSet collects rendered output files, to write them only once every
// one of them rendered.
type fileSet struct {
	paths []string
	data  map[string][]byte
	dirs  []string // directories to create first
	// moves are files written earlier under a pending name (the per-query
	// file, streamed while scoring), renamed into place with the rest.
	moves [][2]string
}

func (f *fileSet) add(path string, data []byte) {
	if f.data == nil {
		f.data = map[string][]byte{}
	}
	if _, dup := f.data[path]; !dup {
		f.paths = append(f.paths, path)
	}
	f.data[path] = data
}

// write writes every file in two phases: all of them to temporary files
// first, and only when every one is written are they renamed into place,
// in the order they were added, so a failure leaves no output behind.
func (f *fileSet) write() error {
	for _, d := range f.dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create report directory: %w", err)
		}
	}
	for _, p := range f.paths { // a rename onto a directory would fail half way
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return usagef("write %s: is a directory, want a file", p)
		}
	}
	staged := make([]*atomicfile.File, 0, len(f.paths))
	defer func() {
		for _, af := range staged {
			af.Abort() // nothing once committed
		}
	}()
	for _, p := range f.paths {
		af, err := atomicfile.Create(p)
		if err != nil {
			return err
		}
		staged = append(staged, af)
		if _, err := af.Write(f.data[p]); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
		if err := af.Flush(); err != nil {
			return fmt.Errorf("write %s: %w", p, err)
		}
	}
	for _, af := range staged {
		if err := af.Commit(); err != nil {
			return err
		}
	}
	for _, m := range f.moves {
		if err := os.Rename(m[0], m[1]); err != nil {
			return fmt.Errorf("write %s: %w", m[1], err)
		}
	}
	return nil
}

// checkOutputs refuses, before any work, output paths that cannot be
// written: a directory where a file goes, a parent directory that does not
// exist or is a file. dirs are directories to be created (--report): the
// nearest existing ancestor must be a directory.
func checkOutputs(files map[string]string, dirs map[string]string) error {
	for _, flag := range slices.Sorted(maps.Keys(files)) { // the same error first, every time
		p := files[flag]
		if p == "" {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return usagef("--%s %s: is a directory, want a file", flag, p)
		}
		dir := filepath.Dir(p)
		fi, err := os.Stat(dir)
		switch {
		case err != nil:
			return usagef("--%s %s: directory %s does not exist", flag, p, dir)
		case !fi.IsDir():
			return usagef("--%s %s: %s is not a directory", flag, p, dir)
		}
	}
	for _, flag := range slices.Sorted(maps.Keys(dirs)) {
		d := dirs[flag]
		if d == "" {
			continue
		}
		for a := d; ; a = filepath.Dir(a) {
			fi, err := os.Stat(a)
			if err == nil {
				if !fi.IsDir() {
					return usagef("--%s %s: %s is not a directory", flag, d, a)
				}
				break
			}
			if a == filepath.Dir(a) {
				break
			}
		}
	}
	return nil
}

// verdict turns a gate verdict into the process's exit: 1 when an error
// gate failed. The verdict has been printed already.
func verdict(s *summary.Summary) error {
	if s.Gate != nil && s.Gate.ExitCode == 1 {
		return gateFailed{msg: s.Gate.Headline}
	}
	return nil
}
