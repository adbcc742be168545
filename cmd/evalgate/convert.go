package main

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/internal/atomicfile"
	"github.com/evalgate/evalgate/schema"
)

func convertCommand() *cli.Command {
	return &cli.Command{
		Name:      "convert",
		Usage:     "convert a gold set or run to Arrow IPC or Parquet",
		ArgsUsage: "IN OUT",
		Description: "Reads IN in any supported format and writes OUT in the format of its extension " +
			"(.arrow: Arrow IPC file, .arrows: Arrow IPC stream, .parquet: Parquet), in the schemas " +
			"documented in schema/: TREC files become the long form, JSONL files the list form (tags kept).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "role", Value: "auto", Usage: "gold, run or auto (from the content)"},
			&cli.StringFlag{Name: "from", Value: "auto", Usage: "format of IN (auto, trec, jsonl, arrow, arrow-stream, parquet)"},
			&cli.StringFlag{Name: "to", Value: "auto", Usage: "format of OUT (auto: by extension; arrow, arrow-stream or parquet)"},
			&cli.StringFlag{Name: "compression", Value: "none", Usage: "Parquet compression: none (reads and writes fastest), snappy (1.7x smaller) or zstd (smallest, slow to write)"},
			&cli.BoolFlag{Name: "plain-query-ids", Usage: "Arrow IPC: write a run's query_id as utf8 on every row rather than run-end encoded (for tools that do not read run-end encoded columns)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return usagef("convert takes IN and OUT, got %d arguments", c.NArg())
			}
			in, out := c.Args().Get(0), c.Args().Get(1)
			if samePath(in, out) {
				return inputf("convert %s %s: OUT is IN: write the converted file elsewhere", in, out)
			}
			from, err := schema.ParseFormat(c.String("from"))
			if err != nil {
				return usageError{fmt.Errorf("--from: %w", err)}
			}
			to, err := schema.ParseFormat(c.String("to"))
			if err != nil {
				return usageError{fmt.Errorf("--to: %w", err)}
			}
			if to == schema.FormatAuto {
				to = schema.FormatFromExtension(out)
			}
			if to != schema.FormatArrow && to != schema.FormatArrowStream && to != schema.FormatParquet {
				return usagef("cannot write %s: OUT must end in .arrow, .arrows or .parquet (or give --to)", out)
			}
			if _, err := schema.ParquetCodec(c.String("compression")); err != nil {
				return usageError{fmt.Errorf("--compression: %w", err)}
			}
			wopts := schema.WriterOptions{Compression: c.String("compression"), PlainQueryIDs: c.Bool("plain-query-ids")}
			var role schema.Role
			switch c.String("role") {
			case "gold":
				role = schema.RoleGold
			case "run":
				role = schema.RoleRun
			case "auto":
				if role, err = schema.DetectRole(in, from); err != nil {
					return err
				}
			default:
				return usagef("--role %q: want gold, run or auto", c.String("role"))
			}
			// The writers keep no view of a batch past its release.
			procs := runtime.GOMAXPROCS(0)
			r, err := schema.Open(c.Context, in, role, schema.Options{Format: from, ReuseMemory: true, Parallelism: procs})
			if err != nil {
				return err
			}
			defer r.Close()
			f, err := atomicfile.CreateUncached(out)
			if err != nil {
				return inputf("write %s: %w", out, err)
			}
			// OUT is written past the page cache: each direct write blocks
			// its thread for as long as the disk takes, and Go's scheduler
			// takes that thread's P back only after a delay
			// (golang/go#18236), so one P more than the reader's parsers
			// keeps the CPUs busy meanwhile (1M x 100 on 2 cores: 5.5-5.8 s
			// without it, under 5 s with it).
			runtime.GOMAXPROCS(procs + 1)
			defer runtime.GOMAXPROCS(procs)
			defer f.Abort()
			rows, err := schema.Convert(c.Context, r, f, out, to, wopts)
			var ie *schema.InputError
			if errors.As(err, &ie) && ie.File == "" {
				ie.File = in // no batch named it
			}
			if err != nil {
				return err
			}
			if err := f.Commit(); err != nil {
				return err
			}
			fmt.Fprintf(c.App.ErrWriter, "wrote %d %s rows (%s) to %s\n", rows, role, r.Form(), out)
			return nil
		},
	}
}
