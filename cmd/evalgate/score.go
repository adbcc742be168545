package main

import (
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/gate"
	"github.com/evalgate/evalgate/summary"
)

func scoreCommand() *cli.Command {
	return &cli.Command{
		Name:  "score",
		Usage: "score a run against a gold set in this process (no queue)",
		Description: "Scores every gold query (a query missing from the run scores 0, as trec_eval -c does) " +
			"and prints the measures overall and per tag. Exit code 0 on success, 2 on bad usage or input.",
		Flags: slices.Concat(jobFlags(), liveFlags(), fillFlags(), outputFlags(), gateFlags(), pairingFlags()),
		Action: func(c *cli.Context) error {
			log, err := logger(c)
			if err != nil {
				return err
			}
			if err := checkFileFlags(c); err != nil {
				return err
			}
			job, err := jobFromFlags(c)
			if err != nil {
				return err
			}
			out, err := outputsFromFlags(c)
			if err != nil {
				return err
			}
			defer out.cleanup()
			g, err := gatingFromFlags(c, c.String("baseline-run") != "")
			if err != nil {
				return err
			}
			if err := pairedMetric(c, &job, g.criteria); err != nil {
				return err
			}
			if err := g.checkBaseline(&job); err != nil {
				return err
			}
			job.Logger = log
			job.PerQuery = out.perQueryFactory(job.Metric.Measures)
			out.attachSaveRun(&job)
			res, err := coordinator.Score(c.Context, job)
			if err != nil {
				return err
			}
			return finish(c, g, out, res.Summary)
		},
	}
}

// finish gates the summary, renders every output, writes the files,
// records the history and then prints: a verdict is printed only once
// everything it refers to exists, and the printed verdict and the exit
// code come from the same value.
func finish(c *cli.Context, g *gating, out *outputs, s *summary.Summary) error {
	if err := g.apply(s); err != nil {
		return err
	}
	var files fileSet
	printed, err := out.render(s, &files)
	if err != nil {
		return err
	}
	hist, done, err := g.historyStore(c.Context, c)
	if err != nil {
		return err
	}
	defer done()
	history, err := historyWith(c.Context, hist, s)
	if err != nil {
		return err
	}
	if err := g.renderReports(s, history, &files); err != nil {
		return err
	}
	if err := files.write(); err != nil {
		return err
	}
	if hist != nil {
		if err := gate.Record(c.Context, hist, s); err != nil {
			return err
		}
	}
	if err := g.stepSummary(s); err != nil {
		return err
	}
	if err := out.print(s, printed, c.App.Writer, c.App.ErrWriter); err != nil {
		return err
	}
	return verdict(s)
}
