package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/judgment"
	"github.com/evalgate/evalgate/summary"
)

// fillFlags are the flags of the filled-in evaluation (score and run).
func fillFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringSliceFlag{Name: "judgments", Usage: "LLM judgments (evalgate judge --out) to fill into the gold set: every measure is reported with human judgments only and with these filled in (repeatable; a human judgment always wins)"},
	}
}

// fillFromFlags reads the --judgments files; a bad line is bad input.
func fillFromFlags(c *cli.Context) (*coordinator.Fill, error) {
	files := c.StringSlice("judgments")
	if len(files) == 0 {
		return nil, nil
	}
	f := &coordinator.Fill{Files: files, Judgments: &judgment.Set{}}
	for _, p := range files {
		if _, err := os.Stat(p); err != nil {
			return nil, inputf("read %s: %w", p, pathCause(err))
		}
		if err := f.Judgments.ReadFile(p); err != nil {
			return nil, fmt.Errorf("read judgments: %w", err)
		}
	}
	return f, nil
}

// fillSaved adds the filled-in evaluation of --judgments to a saved
// summary: the job it records is scored again, in this process, with the
// judgments filled in. The inputs must be as they were (their digests).
func fillSaved(c *cli.Context, s *summary.Summary) error {
	fill, err := fillFromFlags(c)
	if err != nil || fill == nil {
		return err
	}
	job, err := coordinator.JobOf(s)
	if err != nil {
		return inputf("--judgments with %s: %w", c.String("summary"), err)
	}
	log, err := logger(c)
	if err != nil {
		return err
	}
	job.Fill, job.Logger = fill, log
	out, err := coordinator.Score(c.Context, job)
	if err != nil {
		return err
	}
	now := out.Summary
	for _, in := range []struct{ what, was, is string }{
		{"gold set " + s.Inputs.Gold.Path, s.Inputs.Gold.Digest, now.Inputs.Gold.Digest},
		{"run " + s.Inputs.Run.Path, s.Inputs.Run.Digest, now.Inputs.Run.Digest},
	} {
		if in.was != in.is {
			return inputf("--judgments with %s: the %s changed since it was scored (digest %s, was %s)", c.String("summary"), in.what, in.is, in.was)
		}
	}
	s.Filled, s.Judgments = now.Filled, now.Judgments
	return nil
}
