package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/gate"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/summary"
)

func gateCommand() *cli.Command {
	return &cli.Command{
		Name:  "gate",
		Usage: "gate a saved summary (no rescoring): verdict, reports, exit code",
		Description: "Evaluates --criteria against --summary (from --summary-out or a report's summary.json), " +
			"comparing with its baseline run or with --baseline. Exit code 0 pass or warn, 1 an error gate failed, 2 bad input.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "summary", Aliases: []string{"s"}, Usage: "summary JSON to gate (required)"},
			&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "output: table or json"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the output to this file instead of stdout"},
			&cli.StringFlag{Name: "summary-out", Usage: "also write the gated summary JSON to this file"},
		}, append(gateFlags(), natsFlags()...)...),
		Action: func(c *cli.Context) error {
			if err := required(c, "summary", "criteria"); err != nil {
				return err
			}
			if f := c.String("format"); f != "table" && f != "json" {
				return usagef("--format %q: want table or json", f)
			}
			s, err := readSummary(c.String("summary"))
			if err != nil {
				return err
			}
			if s.Baseline != nil && c.String("baseline") != "" {
				return usagef("%s already compares with its baseline run %s (scored with --baseline-run); --baseline would be a second baseline",
					c.String("summary"), s.Baseline.Input.Path)
			}
			g, err := gatingFromFlags(c, s.Baseline != nil)
			if err != nil {
				return err
			}
			s.Gate = nil
			out := &outputs{format: c.String("format"), output: c.String("output"), summaryOut: c.String("summary-out")}
			if err := checkOutputs(map[string]string{"output": out.output, "summary-out": out.summaryOut}, nil); err != nil {
				return err
			}
			return finish(c, g, out, s)
		},
	}
}

func compareCommand() *cli.Command {
	flags := slices.Concat([]cli.Flag{
		&cli.StringFlag{Name: "gold", Aliases: []string{"g"}, Usage: "gold set (required)"},
		&cli.StringSliceFlag{Name: "run", Aliases: []string{"r"}, Usage: "runs to compare, at least two; the first is the reference"},
		&cli.StringSliceFlag{Name: "measure", Aliases: []string{"m"}, Usage: "measures (default: the standard set)"},
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "output: table or json"},
		&cli.StringFlag{Name: "gold-format", Value: "auto"}, &cli.StringFlag{Name: "run-format", Value: "auto"},
		&cli.IntFlag{Name: "rel-level", Value: 1}, &cli.IntFlag{Name: "depth"},
		&cli.StringFlag{Name: "rank-by", Value: "score"},
		&cli.BoolFlag{Name: "skip-no-relevant"}, &cli.BoolFlag{Name: "only-run-queries"}, &cli.BoolFlag{Name: "strict"},
	}, pairingFlags()[2:])
	return &cli.Command{
		Name:  "compare",
		Usage: "A/B test two or more runs on one gold set: differences, 95% intervals, p-values",
		Description: "Scores every run against the gold set and compares each with the first, query by query " +
			"(Poisson bootstrap intervals, paired randomization test).",
		Flags: flags,
		Action: func(c *cli.Context) error {
			log, err := logger(c)
			if err != nil {
				return err
			}
			if err := required(c, "gold", "run"); err != nil {
				return err
			}
			runs := c.StringSlice("run")
			if len(runs) < 2 {
				return usagef("compare needs at least two --run (the first is the reference)")
			}
			if f := c.String("format"); f != "table" && f != "json" {
				return usagef("--format %q: want table or json", f)
			}
			var results []*summary.Summary
			for _, r := range runs[1:] {
				job, err := jobFromFlagsFor(c, r)
				if err != nil {
					return err
				}
				job.Baseline = coordinator.Input{Path: runs[0], Format: job.Run.Format}
				job.Metric.Paired, job.Metric.CurveDepth = true, 100
				var pairs []int
				for i, m := range job.Metric.Measures {
					if !m.Summed() {
						pairs = append(pairs, i)
					}
				}
				job.Metric.Pairing = &metric.Pairing{Measures: pairs, Replicates: c.Int("bootstrap"), Permutations: c.Int("permutations"),
					Seed: c.Uint64("seed"), TopK: c.Int("top-regressed")}
				job.Logger = log
				out, err := coordinator.Score(c.Context, job)
				if err != nil {
					return err
				}
				results = append(results, out.Summary)
			}
			if c.String("format") == "json" {
				var b strings.Builder
				b.WriteString("[\n")
				for i, s := range results {
					if i > 0 {
						b.WriteString(",\n")
					}
					if err := s.WriteJSON(&b); err != nil {
						return err
					}
				}
				b.WriteString("]\n")
				_, err := fmt.Fprint(c.App.Writer, b.String())
				return err
			}
			return writeComparison(c, runs, results)
		},
	}
}

// writeComparison prints each run against the reference. Every Δ, interval
// and p-value of a run comes from that run's own pairing with the
// reference, over the same queries. When the pairs were scored over
// different queries (--only-run-queries and runs that cover different
// queries), the reference has no single value: each run's columns then
// carry the reference's value and query count on that run's queries.
func writeComparison(c *cli.Context, runs []string, results []*summary.Summary) error {
	shared := true
	for _, s := range results[1:] {
		if s.Counts.ScoredQueries != results[0].Counts.ScoredQueries ||
			!slices.Equal(s.Baseline.Measures, results[0].Baseline.Measures) {
			shared = false
		}
	}
	var b strings.Builder
	if shared {
		fmt.Fprintf(&b, "reference: %s (%s)\n\n", runs[0], summary.Count(results[0].Counts.ScoredQueries, "query", "queries"))
	} else {
		fmt.Fprintf(&b, "reference: %s, scored on each run's own queries (--only-run-queries): every column pair uses one query set\n\n", runs[0])
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "measure")
	if shared {
		fmt.Fprint(tw, "\t"+runs[0])
	}
	for i, r := range runs[1:] {
		if !shared {
			fmt.Fprintf(tw, "\treference on its %s", summary.Count(results[i].Counts.ScoredQueries, "query", "queries"))
		}
		fmt.Fprintf(tw, "\t%s\tΔ\t95%% CI\tp", r)
	}
	fmt.Fprintln(tw)
	for i, m := range results[0].Baseline.Measures {
		fmt.Fprint(tw, m.Name)
		if shared {
			fmt.Fprintf(tw, "\t%s", summary.FormatValue(m))
		}
		for _, s := range results {
			ref, v := s.Baseline.Measures[i], s.Measures[i]
			ci, p := "–", "–"
			if mc := s.Comparison.Measure(m.Name); mc != nil {
				if mc.CILow != nil && mc.CIHigh != nil {
					ci = fmt.Sprintf("[%s, %s]", summary.Signed(*mc.CILow), summary.Signed(*mc.CIHigh))
				}
				if mc.PValue != nil {
					p = fmt.Sprintf("%.3f", *mc.PValue)
				}
			}
			if !shared {
				fmt.Fprintf(tw, "\t%s", summary.FormatValue(ref))
			}
			delta := summary.Signed(v.Value - ref.Value)
			if v.Kind != "mean" {
				delta = fmt.Sprintf("%+.0f", v.Value-ref.Value)
			}
			fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s", summary.FormatValue(v), strings.Replace(delta, "-", "−", 1), ci, p)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	_, err := fmt.Fprint(c.App.Writer, b.String())
	return err
}

func historyCommand() *cli.Command {
	return &cli.Command{
		Name:  "history",
		Usage: "show the trend of every measure over a history of runs, with alerts",
		Description: "Reads the summaries kept with --history (a directory, or \"jetstream\" with --nats) and prints, per " +
			"measure, the current value, mean, min, max and the change since the first and the last run. Alerts: a value " +
			"below a gate's floor (--criteria) or a measure going down --down-nights runs in a row.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "history", Usage: "history directory, or \"jetstream\" (with --nats) (required)"},
			&cli.StringFlag{Name: "criteria", Usage: "ship criteria: floors for the alerts"},
			&cli.IntFlag{Name: "down-nights", Value: 3, Usage: "alert when a measure went down this many runs in a row (0: never)"},
			&cli.BoolFlag{Name: "fail-on-alert", Usage: "exit 1 when there is an alert"},
			&cli.StringFlag{Name: "html", Usage: "write the HTML report of the latest run with its trend lines"},
		}, natsFlags()...),
		Action: func(c *cli.Context) error {
			if err := required(c, "history"); err != nil {
				return err
			}
			g := &gating{history: c.String("history")}
			if g.history == "jetstream" && c.String("nats") == "" {
				return usagef("--history jetstream needs --nats")
			}
			if g.history != "jetstream" { // a mistyped path must not read as an empty history
				if fi, err := os.Stat(g.history); err != nil || !fi.IsDir() {
					return usagef("--history %s: no such directory", g.history)
				}
			}
			var cr *gate.Criteria
			if p := c.String("criteria"); p != "" {
				var err error
				if cr, err = gate.LoadCriteria(p); err != nil {
					return err
				}
			}
			store, done, err := g.historyStore(c.Context, c)
			if err != nil {
				return err
			}
			defer done()
			history, err := gate.Load(c.Context, store)
			if err != nil {
				return err
			}
			trends := gate.Trends(history, cr, c.Int("down-nights"))
			if err := gate.WriteTrends(c.App.Writer, trends); err != nil {
				return err
			}
			if p := c.String("html"); p != "" && len(history) > 0 {
				var files fileSet
				g := &gating{html: p, criteria: cr}
				if err := g.renderReports(history[len(history)-1], history, &files); err != nil {
					return err
				}
				if err := files.write(); err != nil {
					return err
				}
			}
			if c.Bool("fail-on-alert") && gate.Alerts(trends) > 0 {
				return gateFailed{msg: "history alerts"}
			}
			return nil
		},
	}
}
