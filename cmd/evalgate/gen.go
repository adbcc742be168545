package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/synth"
)

func genCommand() *cli.Command {
	return &cli.Command{
		Name:  "gen",
		Usage: "write a synthetic gold set and run, or a corpus and a gold set over it (for benchmarks and trials)",
		Description: "Each query has 1-9 relevant documents graded 1-5 and a ranking of --depth documents " +
			"(the setup ranx benchmarks with). Output depends only on the flags. The gold set depends only on " +
			"--queries and --seed, so runs of different quality (--recall, --rank-decay) share it.\n\n" +
			"With --corpus it writes corpus.jsonl (doc_id, title, text) and gold.jsonl (queries with their text, " +
			"relevant documents graded 1-3) instead: queries a search engine can answer over that corpus, " +
			"such as the example retriever of examples/retriever. Both depend only on --seed, --queries and --docs.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "queries", Aliases: []string{"n"}, Value: 1000, Usage: "number of queries"},
			&cli.IntFlag{Name: "depth", Aliases: []string{"k"}, Value: 100, Usage: "documents ranked per query"},
			&cli.Uint64Flag{Name: "seed", Aliases: []string{"s"}, Value: 1, Usage: "random seed"},
			&cli.StringFlag{Name: "format", Value: "trec", Usage: "trec, jsonl, arrow or parquet (--corpus: jsonl)"},
			&cli.BoolFlag{Name: "tags", Usage: "add category and difficulty tags (jsonl, arrow, parquet)"},
			&cli.Float64Flag{Name: "recall", Value: 0.7, Usage: "chance that the run retrieves a relevant document"},
			&cli.Float64Flag{Name: "rank-decay", Usage: "0: relevant documents at uniformly random ranks (ranx's benchmark setup); " +
				"in (0,1): near the top, like a useful retriever (0.5: about half of them first)"},
			&cli.BoolFlag{Name: "corpus", Usage: "write corpus.jsonl and gold.jsonl for a search engine to answer, instead of gold.* and run.*"},
			&cli.IntFlag{Name: "docs", Usage: fmt.Sprintf("--corpus: number of documents (default %d per query)", synth.DocsPerQuery)},
			&cli.StringFlag{Name: "out", Value: ".", Usage: "directory for the files"},
		},
		Action: func(c *cli.Context) error {
			if c.Bool("corpus") {
				return genCorpus(c)
			}
			if c.IsSet("docs") {
				return usagef("--docs needs --corpus")
			}
			f, err := schema.ParseFormat(c.String("format"))
			if err != nil || f == schema.FormatArrowStream || f == schema.FormatAuto {
				return usagef("--format %q: want trec, jsonl, arrow or parquet", c.String("format"))
			}
			if c.Bool("tags") && f == schema.FormatTREC {
				return usagef("--tags needs --format jsonl, arrow or parquet: TREC files carry no tags")
			}
			o := synth.Options{Queries: c.Int("queries"), Depth: c.Int("depth"), Seed: c.Uint64("seed"), Format: f, Tags: c.Bool("tags"),
				RecallRate: c.Float64("recall"), RankDecay: c.Float64("rank-decay")}
			if err := o.Validate(); err != nil {
				return usageError{err}
			}
			if err := os.MkdirAll(c.String("out"), 0o755); err != nil {
				return fmt.Errorf("create %s: %w", c.String("out"), err)
			}
			gold, run := synth.Paths(c.String("out"), f)
			if err := synth.Write(c.Context, o, gold, run); err != nil {
				return err
			}
			fmt.Fprintf(c.App.ErrWriter, "wrote %s and %s (%d queries x %d results)\n", gold, run, o.Queries, o.Depth)
			return nil
		},
	}
}

// genCorpus is gen --corpus.
func genCorpus(c *cli.Context) error {
	for _, name := range []string{"depth", "recall", "rank-decay"} {
		if c.IsSet(name) {
			return usagef("--%s has no meaning with --corpus: the search engine makes the run", name)
		}
	}
	if c.IsSet("format") && c.String("format") != "jsonl" {
		return usagef("--format %q: --corpus writes jsonl (the gold set carries the query text)", c.String("format"))
	}
	o := synth.CorpusOptions{Queries: c.Int("queries"), Docs: c.Int("docs"), Seed: c.Uint64("seed"), Tags: c.Bool("tags")}
	if c.IsSet("docs") && o.Docs < 1 {
		return usagef("--docs %d: want at least 1", o.Docs)
	}
	if err := o.Validate(); err != nil {
		return usageError{err}
	}
	if err := os.MkdirAll(c.String("out"), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", c.String("out"), err)
	}
	corpus, gold := synth.CorpusPaths(c.String("out"))
	if err := synth.WriteCorpus(c.Context, o, corpus, gold); err != nil {
		return err
	}
	docs := o.Docs
	if docs == 0 {
		docs = synth.DocsPerQuery * o.Queries
	}
	fmt.Fprintf(c.App.ErrWriter, "wrote %s (%d documents) and %s (%d queries)\n", corpus, docs, gold, o.Queries)
	return nil
}
