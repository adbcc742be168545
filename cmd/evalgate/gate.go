package main

import (
	"os"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/gate"
)

func gateCommand() *cli.Command {
	return &cli.Command{
		Name:  "gate",
		Usage: "gate a saved summary (no rescoring, but with --judgments): verdict, reports, exit code",
		Description: "Evaluates --criteria against --summary (from --summary-out or a report's summary.json), " +
			"comparing with its baseline run or with --baseline. Exit code 0 pass or warn, 1 an error gate failed, 2 bad input.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "summary", Aliases: []string{"s"}, Usage: "summary JSON to gate (required)"},
			&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "output: table or json"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the output to this file instead of stdout"},
			&cli.StringFlag{Name: "summary-out", Usage: "also write the gated summary JSON to this file"},
		}, slices.Concat(markRequired(gateFlags(), "criteria"), fillFlags(), natsFlags())...),
		Action: func(c *cli.Context) error {
			if err := required(c, "summary", "criteria"); err != nil {
				return err
			}
			if f := c.String("format"); f != "table" && f != "json" {
				return usagef("--format %q: want table or json", f)
			}
			if err := checkFileFlags(c); err != nil {
				return err
			}
			out := &outputs{format: c.String("format"), output: c.String("output"), summaryOut: c.String("summary-out")}
			if err := checkOutputs(map[string]string{"output": out.output, "summary-out": out.summaryOut}, nil); err != nil {
				return err
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
			if err := fillSaved(c, s); err != nil {
				return err
			}
			s.Gate = nil
			return finish(c, g, out, s)
		},
	}
}

func historyCommand() *cli.Command {
	return &cli.Command{
		Name:  "history",
		Usage: "show the trend of every measure over a history of runs, with alerts",
		Description: "Reads the summaries kept with --history (a directory, or \"jetstream\" with --nats) and prints, per " +
			"measure, the current value, mean, min, max and the change since the first and the last run. Alerts: a value " +
			"below a gate's floor (--criteria; a tag gate's floor on its tag group) or a measure going down --down-nights runs " +
			"in a row. Gates that cannot be checked on the latest run are named as such; they raise no alert.",
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
			if err := checkHistoryFlag(c, g.history); err != nil {
				return err
			}
			if g.history != "jetstream" { // a mistyped path must not read as an empty history
				if _, err := os.Stat(g.history); err != nil {
					return inputf("--history %s: no such directory", g.history)
				}
			}
			if err := checkFileFlags(c); err != nil {
				return err
			}
			if err := checkOutputs(map[string]string{"html": c.String("html")}, nil); err != nil {
				return err
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
			if err := gate.WriteTrends(c.App.Writer, trends, gate.NotChecked(history, cr)); err != nil {
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
