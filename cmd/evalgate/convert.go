package main

import (
	"errors"
	"fmt"
	"io"

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
			wopts := schema.WriterOptions{Compression: c.String("compression")}
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
			r, err := schema.Open(c.Context, in, role, schema.Options{Format: from})
			if err != nil {
				return err
			}
			defer r.Close()
			f, err := atomicfile.Create(out)
			if err != nil {
				return inputf("write %s: %w", out, err)
			}
			defer f.Abort()
			var w schema.RecordWriter
			rows := int64(0)
			for {
				b, err := r.Next(c.Context)
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return err
				}
				if w == nil {
					if w, err = schema.NewRecordWriterWith(f, to, b.Record.Schema(), wopts); err != nil {
						b.Release()
						return err
					}
				}
				rows += b.Record.NumRows()
				err = w.Write(b.Record)
				b.Release()
				if err != nil {
					return fmt.Errorf("write %s: %w", out, err)
				}
			}
			if w == nil {
				return &schema.InputError{File: in, Err: fmt.Errorf("%w: no rows", schema.ErrMissingField)}
			}
			if err := w.Close(); err != nil {
				return fmt.Errorf("write %s: %w", out, err)
			}
			if err := f.Commit(); err != nil {
				return err
			}
			fmt.Fprintf(c.App.ErrWriter, "wrote %d %s rows (%s) to %s\n", rows, role, r.Form(), out)
			return nil
		},
	}
}
