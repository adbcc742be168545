package main

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/gate"
	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/perquery"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/summary"
)

// jobFlags are the flags that define what is scored and how; score and run
// share them.
func jobFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "gold", Aliases: []string{"g"}, Usage: "gold set (required): TREC qrels, JSONL, Arrow IPC or Parquet (optionally .gz)"},
		&cli.StringFlag{Name: "run", Aliases: []string{"r"}, Usage: "run to score (required): TREC run, JSONL, Arrow IPC or Parquet (optionally .gz)"},
		&cli.StringSliceFlag{Name: "measure", Aliases: []string{"m"}, Usage: "measures, comma-separated or repeated (default: " + strings.Join(metric.Names(metric.DefaultMeasures()), ",") + ")"},
		&cli.StringFlag{Name: "gold-format", Value: "auto", Usage: "auto, trec, jsonl, arrow, arrow-stream or parquet"},
		&cli.StringFlag{Name: "run-format", Value: "auto", Usage: "auto, trec, jsonl, arrow, arrow-stream or parquet"},
		&cli.StringFlag{Name: "rank-by", Value: "score", Usage: "score (descending, trec_eval's tie-break) or rank (the rank column); with --retriever, how to read --baseline-run"},
		&cli.IntFlag{Name: "rel-level", Value: 1, Usage: "smallest grade that counts as relevant (trec_eval -l)"},
		&cli.IntFlag{Name: "depth", Usage: "score only the best N documents of each query (trec_eval -M); 0 = all"},
		&cli.BoolFlag{Name: "strict", Usage: "refuse a run with a doc id twice in one query, as trec_eval does"},
		&cli.BoolFlag{Name: "judged-only", Usage: "drop unjudged documents from each ranking before scoring, ranks closing up (trec_eval -J; after --depth)"},
		&cli.BoolFlag{Name: "skip-no-relevant", Usage: "leave out gold queries without a relevant document instead of scoring them 0"},
		&cli.BoolFlag{Name: "only-run-queries", Usage: "average over queries in both files (trec_eval without -c) instead of every gold query"},
	}
}

// outputFlags control what score and run print and write.
func outputFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "output: table, json or trec"},
		&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the output to this file (atomically) instead of stdout"},
		&cli.StringFlag{Name: "per-query", Usage: "write per-query values to this file: .jsonl, .tsv, .trec, .arrow, .arrows or .parquet"},
		&cli.BoolFlag{Name: "q", Usage: "with --format trec, also print per-query lines (trec_eval -q)"},
		&cli.StringFlag{Name: "summary-out", Usage: "also write the JSON summary to this file (a baseline for later gates)"},
	}
}

// jobFromFlags builds a job from jobFlags (and liveFlags).
func jobFromFlags(c *cli.Context) (coordinator.Job, error) {
	if err := checkLiveFlags(c); err != nil {
		return coordinator.Job{}, err
	}
	job, err := jobOfFlags(c)
	if err != nil {
		return job, err
	}
	job.Fill, err = fillFromFlags(c)
	return job, err
}

// jobOfFlags builds the job of a run file or a retriever.
func jobOfFlags(c *cli.Context) (coordinator.Job, error) {
	if c.IsSet("retriever") {
		return liveJobFromFlags(c)
	}
	if err := required(c, "gold", "run"); err != nil {
		return coordinator.Job{}, err
	}
	return jobFromFlagsFor(c, c.String("run"))
}

// jobFromFlagsFor builds a job scoring run with the job flags.
func jobFromFlagsFor(c *cli.Context, run string) (coordinator.Job, error) {
	var job coordinator.Job
	gf, err := schema.ParseFormat(c.String("gold-format"))
	if err != nil {
		return job, usageError{fmt.Errorf("--gold-format: %w", err)}
	}
	rf, err := schema.ParseFormat(c.String("run-format"))
	if err != nil {
		return job, usageError{fmt.Errorf("--run-format: %w", err)}
	}
	measures := metric.DefaultMeasures()
	if names := c.StringSlice("measure"); len(names) > 0 {
		if measures, err = metric.ParseList(names); err != nil {
			return job, usageError{err}
		}
		if len(measures) == 0 {
			return job, usagef("-m: no measures given")
		}
	}
	rankBy, err := ingest.ParseRankBy(c.String("rank-by"))
	if err != nil {
		return job, usageError{err}
	}
	if c.Int("depth") < 0 {
		return job, usagef("--depth %d: want 0 (all) or more", c.Int("depth"))
	}
	if c.Int("rel-level") < 0 || c.Int("rel-level") > math.MaxInt32 {
		// Grades below 0 mark judged non-relevant documents (and trec_eval
		// reads -1 as unjudged): a negative level would count them relevant.
		return job, usagef("--rel-level %d: want 0 or more (the smallest grade that counts as relevant)", c.Int("rel-level"))
	}
	level := int32(c.Int("rel-level"))
	job = coordinator.Job{
		Gold:   coordinator.Input{Path: c.String("gold"), Format: gf},
		Run:    coordinator.Input{Path: run, Format: rf},
		Metric: metric.Config{Measures: measures, RelLevel: level, JudgedOnly: c.Bool("judged-only")},
		Ingest: ingest.Config{
			RelLevel:       level,
			RankBy:         rankBy,
			Depth:          c.Int("depth"),
			Strict:         c.Bool("strict"),
			SkipNoRelevant: c.Bool("skip-no-relevant"),
			OnlyRunQueries: c.Bool("only-run-queries"),
			JudgedOnly:     c.Bool("judged-only"),
		},
	}
	for _, p := range []string{job.Gold.Path, job.Run.Path} {
		if p == "" {
			continue // a live retrieval has no run file
		}
		if _, err := os.Stat(p); err != nil {
			return job, inputf("read %s: %w", p, pathCause(err))
		}
	}
	return job, nil
}

// outputs handles the output flags of score and run. The per-query file
// (and, for --format trec -q, the per-query lines) are produced during the
// job; everything is written only once the job succeeded.
type outputs struct {
	format     string
	output     string
	summaryOut string
	perQuery   string
	trecLines  bool
	trecBuf    bytes.Buffer
	saveRun    string // --save-run: the live retrieval's run
	savedRun   []byte // ... as rendered when the job ended
}

func outputsFromFlags(c *cli.Context) (*outputs, error) {
	o := &outputs{
		format:     c.String("format"),
		output:     c.String("output"),
		summaryOut: c.String("summary-out"),
		perQuery:   c.String("per-query"),
		trecLines:  c.Bool("q"),
		saveRun:    c.String("save-run"),
	}
	if o.saveRun != "" {
		if _, err := saveRunFormat(o.saveRun); err != nil {
			return nil, err
		}
	}
	switch o.format {
	case "table", "json", "trec":
	default:
		return nil, usagef("--format %q: want table, json or trec", o.format)
	}
	if o.trecLines && o.format != "trec" {
		return nil, usagef("-q prints per-query lines in --format trec only")
	}
	if o.perQuery != "" {
		if _, err := perquery.FormatOf(o.perQuery); err != nil {
			return nil, usagef("--per-query: %w", err)
		}
	}
	if err := checkOutputs(map[string]string{"output": o.output, "summary-out": o.summaryOut, "per-query": o.perQuery, "save-run": o.saveRun}, nil); err != nil {
		return nil, err
	}
	return o, nil
}

// pendingPerQuery is where the per-query file is streamed while scoring
// (in its directory, keeping its extension, which names the format); it
// is renamed into place with the other outputs.
func (o *outputs) pendingPerQuery() string {
	dir, base := filepath.Split(o.perQuery)
	return filepath.Join(dir, fmt.Sprintf(".evalgate-pending-%d-%s", os.Getpid(), base))
}

// cleanup removes a per-query file left pending by a failed command.
func (o *outputs) cleanup() {
	if o.perQuery != "" {
		os.Remove(o.pendingPerQuery())
	}
}

// perQueryFactory returns the job's per-query writer factory, or nil.
func (o *outputs) perQueryFactory(measures []metric.Measure) func() (perquery.Writer, error) {
	var ws []func() (perquery.Writer, error)
	if o.perQuery != "" {
		ws = append(ws, func() (perquery.Writer, error) { return perquery.Create(o.pendingPerQuery(), measures) })
	}
	if o.trecLines {
		ws = append(ws, func() (perquery.Writer, error) {
			o.trecBuf.Reset()
			return perquery.New(&o.trecBuf, perquery.TREC, measures)
		})
	}
	if len(ws) == 0 {
		return nil
	}
	return func() (perquery.Writer, error) {
		var tee perquery.Tee
		for _, f := range ws {
			w, err := f()
			if err != nil {
				tee.Abort()
				return nil, err
			}
			tee = append(tee, w)
		}
		return tee, nil
	}
}

// render renders the summary in the chosen format (for stdout, or for
// --output, which it adds to files) and the JSON summary for
// --summary-out.
func (o *outputs) render(s *summary.Summary, files *fileSet) ([]byte, error) {
	var b bytes.Buffer
	var err error
	switch o.format {
	case "json":
		err = s.WriteJSON(&b)
	case "trec":
		b.Write(o.trecBuf.Bytes())
		err = s.WriteTREC(&b)
	default:
		err = s.WriteTable(&b)
		if err == nil && s.Gate != nil {
			b.WriteString("\n")
			err = gate.WriteTable(&b, s.Gate)
		}
	}
	if err != nil {
		return nil, err
	}
	if o.summaryOut != "" {
		var j bytes.Buffer
		if err := s.WriteJSON(&j); err != nil {
			return nil, err
		}
		files.add(o.summaryOut, j.Bytes())
	}
	if o.perQuery != "" {
		files.moves = append(files.moves, [2]string{o.pendingPerQuery(), o.perQuery})
	}
	if o.saveRun != "" && o.savedRun != nil {
		files.add(o.saveRun, o.savedRun)
	}
	if o.output != "" {
		files.add(o.output, b.Bytes())
		return nil, nil
	}
	return b.Bytes(), nil
}

// print writes the rendered output to stdout. trec_eval-style lines carry
// no warnings or verdict, so with --format trec those go to stderr: what
// the table and JSON show is never dropped.
func (o *outputs) print(s *summary.Summary, rendered []byte, stdout, stderr io.Writer) error {
	if _, err := stdout.Write(rendered); err != nil {
		return err
	}
	if o.format != "trec" {
		return nil
	}
	var b bytes.Buffer
	for _, w := range s.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	if s.Gate != nil {
		if err := gate.WriteTable(&b, s.Gate); err != nil {
			return err
		}
	}
	_, err := stderr.Write(b.Bytes())
	return err
}
