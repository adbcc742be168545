package main

import (
	"bytes"
	"context"
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
		&cli.BoolFlag{Name: "allow-config-change", Usage: "accept a --baseline summary scored with other options that change values (--rel-level, --depth, --judged-only, …)"},
		&cli.StringFlag{Name: "report", Usage: "write summary.json, comment.md, junit.xml and report.html to this directory"},
		&cli.StringFlag{Name: "comment", Usage: "write the pull-request comment (Markdown) to this file"},
		&cli.StringFlag{Name: "junit", Usage: "write JUnit XML (one test case per gate, or per measure without --criteria) to this file"},
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
	if c.String("baseline") != "" && baselineRun {
		return nil, usagef("--baseline and --baseline-run: give one baseline")
	}
	g.opts.RequireBaseline = c.Bool("require-baseline")
	g.opts.AllowGoldChange = c.Bool("allow-gold-change")
	g.opts.AllowConfigChange = c.Bool("allow-config-change")
	if c.String("criteria") == "" && (c.String("baseline") != "" || g.opts.RequireBaseline) {
		return nil, usagef("--baseline and --require-baseline need --criteria")
	}
	if g.opts.RequireBaseline && c.String("baseline") == "" && !baselineRun {
		return nil, usageError{gate.ErrNoBaseline}
	}
	if err := checkHistoryFlag(c, g.history); err != nil {
		return nil, err
	}
	if err := checkOutputs(map[string]string{"comment": g.comment, "junit": g.junit, "html": g.html},
		map[string]string{"report": g.report}); err != nil {
		return nil, err
	}
	if p := c.String("criteria"); p != "" {
		cr, err := gate.LoadCriteria(p)
		if err != nil {
			return nil, err
		}
		g.criteria = cr
	}
	if p := c.String("baseline"); p != "" {
		s, err := readSummary(p)
		if err != nil {
			return nil, err
		}
		g.opts.Baseline, g.opts.BaselineFile = s, p
	}
	return g, nil
}

// checkHistoryFlag refuses a --history that cannot be a history: a file,
// or "jetstream" without a server.
func checkHistoryFlag(c *cli.Context, history string) error {
	switch {
	case history == "":
		return nil
	case history == "jetstream" && c.String("nats") == "":
		return usagef("--history jetstream needs --nats")
	case history == "jetstream":
		return nil
	}
	if fi, err := os.Stat(history); err == nil && !fi.IsDir() {
		return inputf("--history %s: not a directory (a history is a directory of summaries)", history)
	}
	return nil
}

// readSummary reads a saved summary; a missing or malformed one is bad
// input, named with its file.
func readSummary(path string) (*summary.Summary, error) {
	s, err := summary.ReadFile(path)
	if err != nil && !schema.IsInvalidInput(err) {
		return nil, inputError{err}
	}
	return s, err
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
		return inputf("read %s: %w", path, pathCause(err))
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

// checkBaseline refuses, before scoring, a saved baseline scored with
// other options that change values than job (Evaluate would refuse it
// after scoring).
func (g *gating) checkBaseline(job *coordinator.Job) error {
	_, err := gate.CheckBaselineConfig(coordinator.SummaryConfig(job), g.opts)
	return err
}

// apply evaluates the criteria (if any) into s.Gate.
func (g *gating) apply(s *summary.Summary) error {
	if g.criteria == nil {
		return nil
	}
	v, err := gate.Evaluate(g.criteria, s, g.opts)
	switch {
	case schema.IsInvalidInput(err):
		return err
	case err != nil:
		return inputError{err} // every gating error is in the criteria, summaries or flags
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
	junit := func(w io.Writer) error { return gate.WriteJUnit(w, s) }
	if g.report != "" {
		// All four, with criteria or without: CI steps key off their names.
		files.dirs = append(files.dirs, g.report)
		for _, f := range []struct {
			name   string
			render func(io.Writer) error
		}{{"summary.json", s.WriteJSON}, {"report.html", report}, {"comment.md", comment}, {"junit.xml", junit}} {
			if err := render(filepath.Join(g.report, f.name), f.render); err != nil {
				return err
			}
		}
	}
	if err := render(g.html, report); err != nil {
		return err
	}
	if err := render(g.comment, comment); err != nil {
		return err
	}
	return render(g.junit, junit)
}

// stepSummary appends the pull-request comment to $GITHUB_STEP_SUMMARY
// when set (GitHub Actions), for a gated summary or when a comment was
// asked for.
func (g *gating) stepSummary(s *summary.Summary) error {
	if (s.Gate == nil && g.report == "" && g.comment == "") || os.Getenv("GITHUB_STEP_SUMMARY") == "" {
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
			return inputf("create report directory: %w", err)
		}
	}
	for _, p := range f.paths { // a rename onto a directory would fail half way
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			return inputf("write %s: is a directory, want a file", p)
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
			// A path the command cannot write to is the user's to fix;
			// a full disk or a failing device (below) is the machine's.
			return inputf("write %s: %w", p, err)
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
			return inputf("--%s %s: is a directory, want a file", flag, p)
		}
		dir := filepath.Dir(p)
		fi, err := os.Stat(dir)
		switch {
		case err != nil:
			return inputf("--%s %s: directory %s does not exist", flag, p, dir)
		case !fi.IsDir():
			return inputf("--%s %s: %s is not a directory", flag, p, dir)
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
					return inputf("--%s %s: %s is not a directory", flag, d, a)
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

// The flags that name files a command reads, and those that name files it
// writes (--report names a directory of four).
var (
	inputFileFlags  = []string{"gold", "run", "retriever", "baseline-run", "baseline", "criteria", "summary", "corpus", "llm"}
	inputSliceFlags = []string{"judgments"}
	outputFileFlags = []string{"output", "summary-out", "per-query", "save-run", "comment", "junit", "html", "out"}
	reportFiles     = []string{"summary.json", "comment.md", "junit.xml", "report.html"}
)

// namedPath is a path and the flag that gave it, for messages.
type namedPath struct{ flag, path string }

// checkFileFlags refuses, before anything is read, an output that would
// replace one of the command's inputs, and two outputs on one file (one
// would replace the other). Paths are compared cleaned and absolute, and
// through the file system: a symbolic link, a hard link or a symbolically
// linked directory reaches the same file under another name.
func checkFileFlags(c *cli.Context) error {
	var ins, outs []namedPath
	for _, f := range inputFileFlags {
		if p := c.String(f); p != "" {
			ins = append(ins, namedPath{"--" + f, p})
		}
	}
	for _, f := range inputSliceFlags {
		for _, p := range c.StringSlice(f) {
			ins = append(ins, namedPath{"--" + f, p})
		}
	}
	for _, f := range outputFileFlags {
		if p := c.String(f); p != "" {
			outs = append(outs, namedPath{"--" + f, p})
		}
	}
	if d := c.String("report"); d != "" {
		for _, name := range reportFiles {
			outs = append(outs, namedPath{"--report " + d + " (" + name + ")", filepath.Join(d, name)})
		}
	}
	for i, o := range outs {
		for _, in := range ins {
			if samePath(o.path, in.path) {
				return inputf("%s %s is the input %s %s: writing it would destroy the input", o.flag, o.path, in.flag, in.path)
			}
		}
		for _, o2 := range outs[:i] {
			if samePath(o.path, o2.path) {
				return inputf("%s %s and %s %s are the same file: one output would replace the other", o2.flag, o2.path, o.flag, o.path)
			}
		}
	}
	return nil
}

// samePath reports whether a and b name the same file: the same cleaned
// absolute path after resolving symbolic links (of the directory, for a
// file that does not exist yet), or the same existing file (hard links).
func samePath(a, b string) bool {
	if ra, rb := resolvePath(a), resolvePath(b); ra == rb {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// resolvePath is p absolute, cleaned, with symbolic links resolved as far
// as the path exists.
func resolvePath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		return r
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// verdict turns a gate verdict into the process's exit: 1 when an error
// gate failed. The verdict has been printed already.
func verdict(s *summary.Summary) error {
	if s.Gate != nil && s.Gate.ExitCode == 1 {
		return gateFailed{msg: s.Gate.Headline}
	}
	return nil
}
