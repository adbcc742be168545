package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/retrieval"
	"github.com/evalgate/evalgate/retriever"
	"github.com/evalgate/evalgate/schema"
)

// liveFlags are the flags of a live retrieval (score and run).
func liveFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "retriever", Usage: "ask this retriever (a retriever file, docs/retrievers.md) for every gold query instead of reading --run"},
		&cli.StringFlag{Name: "save-run", Usage: "with --retriever, write what was retrieved to this file (.trec or .jsonl; rank = list position: replay with `score --rank-by rank`)"},
		&cli.StringFlag{Name: "max-failed-queries", Value: "0", Usage: "with --retriever, queries that may get no answer (N, or P% of the queries) before the job fails; they score 0"},
		&cli.IntFlag{Name: "queries-per-task", Value: coordinator.DefaultQueriesPerTask, Usage: "with --retriever, gold queries per task"},
	}
}

// liveJobFromFlags builds a live retrieval job: the gold set and scoring
// flags as for a run, the retriever file read with this process's
// environment (an unset ${VAR} stops here).
func liveJobFromFlags(c *cli.Context) (coordinator.Job, error) {
	if err := required(c, "gold"); err != nil {
		return coordinator.Job{}, err
	}
	if c.IsSet("run") {
		return coordinator.Job{}, usagef("--run and --retriever: give one (the retriever's answers are the run)")
	}
	// --rank-by stays: it says how to read --baseline-run (a run saved
	// with --save-run replays with --rank-by rank).
	for _, f := range []string{"run-format", "strict"} {
		if c.IsSet(f) {
			return coordinator.Job{}, usagef("--%s applies to run files; with --retriever the ranking is the answer's list order", f)
		}
	}
	job, err := jobFromFlagsFor(c, "")
	if err != nil {
		return job, err
	}
	cfg, err := loadRetrieverFile(c.String("retriever"))
	if err != nil {
		return job, err
	}
	budget, err := retrieval.ParseBudget(c.String("max-failed-queries"))
	if err != nil {
		return job, usageError{err}
	}
	if n := c.Int("queries-per-task"); n < 1 {
		return job, usagef("--queries-per-task %d: want at least 1", n)
	}
	job.Retriever = &coordinator.Retriever{Config: cfg, Failures: budget, QueriesPerTask: c.Int("queries-per-task")}
	return job, nil
}

// loadRetrieverFile reads a retriever file with this process's
// environment (an unset ${VAR} stops here).
func loadRetrieverFile(path string) (*retriever.Config, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, inputf("read %s: %w", path, pathCause(err))
	}
	return retriever.Load(path, os.LookupEnv)
}

// checkLiveFlags refuses the live retrieval flags without --retriever.
func checkLiveFlags(c *cli.Context) error {
	if c.IsSet("retriever") {
		return nil
	}
	for _, f := range []string{"save-run", "max-failed-queries", "queries-per-task"} {
		if c.IsSet(f) {
			return usagef("--%s needs --retriever", f)
		}
	}
	return nil
}

// saveRunFormat is the run format --save-run writes, by extension.
func saveRunFormat(path string) (schema.Format, error) {
	switch ext := strings.ToLower(filepath.Ext(strings.TrimSuffix(path, ".gz"))); {
	case strings.HasSuffix(path, ".gz"):
		return 0, usagef("--save-run %s: compressed output is not written; drop .gz", path)
	case ext == ".trec" || ext == ".txt" || ext == ".run":
		return schema.FormatTREC, nil
	case ext == ".jsonl":
		return schema.FormatJSONL, nil
	default:
		return 0, usagef("--save-run %s: want a .trec or .jsonl file", path)
	}
}

// attachSaveRun makes the job hand its retrieved run to the outputs, to be
// written with the other files once the command succeeded.
func (o *outputs) attachSaveRun(job *coordinator.Job) {
	if o.saveRun == "" {
		return
	}
	format, _ := saveRunFormat(o.saveRun) // checked with the outputs
	job.SaveRun = func(file string, recs []*retrieval.Record) error {
		tag := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		var b bytes.Buffer
		if err := retrieval.WriteRun(&b, format, tag, recs); err != nil {
			return fmt.Errorf("--save-run %s: %w", o.saveRun, err)
		}
		o.savedRun = b.Bytes()
		return nil
	}
}
