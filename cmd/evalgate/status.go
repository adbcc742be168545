package main

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/internal/jsq"
)

func statusCommand() *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show jobs (tasks done/pending/failed; a task is a part of a shard) and the workers seen",
		ArgsUsage: "[JOB]",
		Flags:     markRequired(natsFlags(), "nats"),
		Action: func(c *cli.Context) error {
			log, err := logger(c)
			if err != nil {
				return err
			}
			if err := required(c, "nats"); err != nil {
				return err
			}
			opts := natsOptions(c, "evalgate-status")
			opts.Logger = log
			conn, err := jsq.Connect(c.Context, opts)
			if err != nil {
				return err
			}
			defer conn.Close()
			var ms []*coordinator.Manifest
			if job := c.Args().First(); job != "" {
				m, err := conn.GetManifest(c.Context, job)
				if err != nil {
					return usageError{err}
				}
				ms = append(ms, m)
			} else if ms, err = conn.ListManifests(c.Context); err != nil {
				return err
			}
			slices.SortFunc(ms, func(a, b *coordinator.Manifest) int { return a.Created.Compare(b.Created) })
			var b strings.Builder
			tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "JOB\tSTATE\tTASKS DONE\tPENDING\tFAILED\tQUERIES\tCREATED\tERROR")
			for _, m := range ms {
				counts, err := conn.Counts(c.Context, m.Job)
				if err != nil {
					return err
				}
				total := "?"
				if m.Tasks > 0 {
					total = fmt.Sprint(m.Tasks)
				}
				fmt.Fprintf(tw, "%s\t%s\t%d/%s\t%d\t%d\t%d\t%s\t%s\n", m.Job, m.State, counts.Done, total, counts.Pending,
					counts.Failed, m.Queries, m.Created.Format(time.DateTime), m.Error)
			}
			tw.Flush()
			ws, err := conn.Workers(c.Context)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "\nworkers seen in the last 30s: %d\n", len(ws))
			for _, w := range ws {
				fmt.Fprintf(&b, "  %s (host %s, %d slots, up since %s)\n", w.ID, w.Host, w.Concurrency, w.Started.Format(time.DateTime))
			}
			_, err = fmt.Fprint(c.App.Writer, b.String())
			return err
		},
	}
}
