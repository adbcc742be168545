package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/compare"
	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/retrieval"
	"github.com/evalgate/evalgate/summary"
)

func compareCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "gold", Aliases: []string{"g"}, Usage: "gold set (required): TREC qrels, JSONL, Arrow IPC or Parquet (optionally .gz)"},
		&cli.StringSliceFlag{Name: "run", Aliases: []string{"r"}, Usage: "a run file to compare (repeat); with --retriever, at least two systems in all, in command-line order: the first is the reference"},
		&cli.StringSliceFlag{Name: "retriever", Usage: "a retriever file (docs/retrievers.md) to ask for every gold query and compare like a run of its answers (repeat)"},
		&cli.StringSliceFlag{Name: "name", Usage: "column names, one per system in command-line order (default: the files' base names without extension)"},
		&cli.StringFlag{Name: "max-failed-queries", Value: "0", Usage: "queries each --retriever may leave without an answer (N, or P% of the queries) before compare fails; they score 0"},
		&cli.StringSliceFlag{Name: "measure", Aliases: []string{"m"}, Usage: "measures, comma-separated or repeated (default: the standard set, as score)"},
		&cli.StringFlag{Name: "format", Aliases: []string{"f"}, Value: "table", Usage: "output: table or json"},
		&cli.StringFlag{Name: "gold-format", Value: "auto", Usage: "auto, trec, jsonl, arrow, arrow-stream or parquet"},
		&cli.StringFlag{Name: "run-format", Value: "auto", Usage: "format of every --run: auto, trec, jsonl, arrow, arrow-stream or parquet"},
		&cli.IntFlag{Name: "rel-level", Value: 1, Usage: "smallest grade that counts as relevant (trec_eval -l)"},
		&cli.IntFlag{Name: "depth", Usage: "score only the best N documents of each query (trec_eval -M); 0 = all"},
		&cli.StringFlag{Name: "rank-by", Value: "score", Usage: "how --run files are ranked: score (descending, trec_eval's tie-break) or rank (the rank column); a retriever's ranking is its answer's list order"},
		&cli.BoolFlag{Name: "skip-no-relevant", Usage: "leave out gold queries without a relevant document instead of scoring them 0"},
		&cli.BoolFlag{Name: "only-run-queries", Usage: "average each pair over the queries of the run compared (trec_eval without -c)"},
		&cli.BoolFlag{Name: "judged-only", Usage: "drop unjudged documents from each ranking before scoring, ranks closing up (trec_eval -J; after --depth)"},
		&cli.BoolFlag{Name: "strict", Usage: "refuse a run with a doc id twice in one query, as trec_eval does (--run files only: not with --retriever)"},
		&cli.IntFlag{Name: "bootstrap", Value: 1000, Usage: "bootstrap replicates for confidence intervals"},
		&cli.IntFlag{Name: "permutations", Value: 1000, Usage: "randomization-test permutations for p-values"},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the bootstrap and the randomization test"},
		&cli.IntFlag{Name: "top-regressed", Value: 10, Usage: "most regressed queries per system in the JSON output"},
		&cli.StringSliceFlag{Name: "judgments", Usage: "LLM judgments (evalgate judge --out) to fill into the gold set: every comparison is also made with them, and the systems' order compared both ways (Kendall's τ-b)"},
	}
	return &cli.Command{
		Name:  "compare",
		Usage: "A/B test two or more systems (run files, live retrievers) on one gold set: differences, 95% intervals, p-values",
		Description: "Compares every system with the first, the reference, query by query: the difference of every mean " +
			"measure, its 95% Poisson bootstrap interval and a paired randomization-test p-value. A system is a run file " +
			"(--run) or a retriever file (--retriever, docs/retrievers.md), asked once for every gold query in this process " +
			"(its own rate limit and concurrency) and compared like a run of its answers: the ranking is the answer's list " +
			"order. Systems are taken in command-line order, --run and --retriever mixed; --name names them in that order. " +
			"Retrievers add their latency (p50, p95, p99) and failed queries to the table. With more than two systems, " +
			"each measure's p-values are Holm-adjusted over the comparisons with the reference (the JSON keeps the raw ones " +
			"too). Every retriever is probed before any system is scored. Exit code 0, 2 on bad usage or input.",
		Flags: flags,
		Action: func(c *cli.Context) error {
			log, err := logger(c)
			if err != nil {
				return err
			}
			if err := required(c, "gold"); err != nil {
				return err
			}
			args, err := compareSystemArgs(c)
			if err != nil {
				return err
			}
			if len(args) < 2 {
				return usagef("compare needs at least two systems, --run or --retriever (the first is the reference); got %d", len(args))
			}
			paths := make([]string, len(args))
			for i, a := range args {
				paths[i] = a.path
			}
			names, err := systemNames(paths, c.StringSlice("name"))
			if err != nil {
				return err
			}
			if f := c.String("format"); f != "table" && f != "json" {
				return usagef("--format %q: want table or json", f)
			}
			test, err := compareTest(c, args, names)
			if err != nil {
				return err
			}
			test.Job.Logger = log
			results, err := compare.Run(c.Context, test)
			if err != nil {
				return err
			}
			if c.String("format") == "json" {
				return writeComparisonJSON(c, results)
			}
			return writeComparison(c, names, results)
		},
	}
}

// systemArg is one system of compare as the command line gives it.
type systemArg struct {
	path      string
	retriever bool
}

// compareSystemArgs returns the --run and --retriever values in
// command-line order. urfave/cli keeps the order of one flag's values but
// not the order between two flags, so the command's arguments are scanned
// as the flag package parses them (a flag that is not boolean takes the
// next argument unless it has "=value"; parsing stops at "--" or the first
// argument that is not a flag), and the result is checked against the
// values urfave/cli parsed.
func compareSystemArgs(c *cli.Context) ([]systemArg, error) {
	boolFlags := map[string]bool{}
	for _, f := range c.Command.Flags {
		if _, ok := f.(*cli.BoolFlag); ok {
			for _, n := range f.Names() {
				boolFlags[n] = true
			}
		}
	}
	args := commandArgs(c)
	var out []systemArg
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || len(a) < 2 || a[0] != '-' {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if !hasValue && !boolFlags[name] && i+1 < len(args) {
			i++
			value = args[i]
		}
		switch name {
		case "run", "r":
			out = append(out, systemArg{path: value})
		case "retriever":
			out = append(out, systemArg{path: value, retriever: true})
		}
	}
	var runs, retrievers []string
	for _, a := range out {
		if a.retriever {
			retrievers = append(retrievers, a.path)
		} else {
			runs = append(runs, a.path)
		}
	}
	if !slices.Equal(runs, c.StringSlice("run")) || !slices.Equal(retrievers, c.StringSlice("retriever")) {
		return nil, usagef("cannot tell the order of --run and --retriever in %q: give each system as --run FILE or --retriever FILE", strings.Join(args, " "))
	}
	return out, nil
}

// commandArgs returns the arguments the command was given after its
// name, as the parent context holds them.
func commandArgs(c *cli.Context) []string {
	for _, l := range c.Lineage()[1:] {
		if args := l.Args().Slice(); len(args) > 0 && args[0] == c.Command.Name {
			return args[1:]
		}
	}
	return nil
}

// systemNames names the systems' columns: --name, one per system, or
// else each file's base name without extension (and .gz) — its path
// where two systems share a base name.
func systemNames(paths, names []string) ([]string, error) {
	if len(names) > 0 {
		if len(names) != len(paths) {
			return nil, usagef("--name: %d names for %d systems; give one per --run or --retriever, in command-line order", len(names), len(paths))
		}
		return names, nil
	}
	out := make([]string, len(paths))
	seen := map[string]int{}
	for i, p := range paths {
		base := strings.TrimSuffix(filepath.Base(p), ".gz")
		if stem := strings.TrimSuffix(base, filepath.Ext(base)); stem != "" {
			base = stem
		}
		out[i] = base
		seen[base]++
	}
	for i, p := range paths {
		if seen[out[i]] > 1 {
			out[i] = p
		}
	}
	return out, nil
}

// compareTest builds the test from the flags: every run file checked and
// every retriever file read (an unset ${VAR} stops here) before anything
// is scored.
func compareTest(c *cli.Context, args []systemArg, names []string) (compare.Test, error) {
	var runs, retrievers int
	for _, a := range args {
		if a.retriever {
			retrievers++
		} else {
			runs++
		}
	}
	switch {
	case retrievers > 0 && c.Bool("strict"):
		return compare.Test{}, usagef("--strict applies to run files, not to a retriever's answers: leave it out with --retriever")
	case retrievers == 0 && c.IsSet("max-failed-queries"):
		return compare.Test{}, usagef("--max-failed-queries needs --retriever")
	}
	if runs == 0 {
		for _, f := range []string{"run-format", "rank-by"} {
			if c.IsSet(f) {
				return compare.Test{}, usagef("--%s applies to --run files; a retriever's ranking is its answer's list order", f)
			}
		}
	}
	job, err := jobFromFlagsFor(c, "")
	if err != nil {
		return compare.Test{}, err
	}
	budget, err := retrieval.ParseBudget(c.String("max-failed-queries"))
	if err != nil {
		return compare.Test{}, usageError{err}
	}
	systems := make([]compare.System, len(args))
	for i, a := range args {
		systems[i].Name = names[i]
		if a.retriever {
			cfg, err := loadRetrieverFile(a.path)
			if err != nil {
				return compare.Test{}, err
			}
			systems[i].Retriever = &coordinator.Retriever{Config: cfg, Failures: budget}
			continue
		}
		if _, err := os.Stat(a.path); err != nil {
			return compare.Test{}, inputf("read %s: %w", a.path, pathCause(err))
		}
		systems[i].Run = coordinator.Input{Path: a.path, Format: job.Run.Format}
	}
	job.Run = coordinator.Input{}
	if job.Fill, err = fillFromFlags(c); err != nil {
		return compare.Test{}, err
	}
	return compare.Test{
		Systems: systems,
		Job:     job,
		Pairing: metric.Pairing{Replicates: c.Int("bootstrap"), Permutations: c.Int("permutations"), Seed: c.Uint64("seed"),
			TopK: c.Int("top-regressed")},
	}, nil
}

// writeComparisonJSON prints the comparisons' summaries as one JSON list,
// the i-th the (i+2)-th system against the reference.
func writeComparisonJSON(c *cli.Context, results []*summary.Summary) error {
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

// writeComparison prints each system against the reference, the columns
// named by names (the reference's first). Every Δ, interval and p-value
// of a system comes from that system's own pairing with the reference,
// over the same queries; with more than two systems the p-values shown are
// Holm-adjusted (the header says so). When the pairs were scored over
// different queries (--only-run-queries and runs that cover different
// queries), the reference has no single value: each system's columns then
// carry the reference's value and query count on that system's queries.
// Retrievers add rows of latency and failed queries, and a line each on
// what they cost.
func writeComparison(c *cli.Context, names []string, results []*summary.Summary) error {
	shared := true
	for _, s := range results[1:] {
		if s.Counts.ScoredQueries != results[0].Counts.ScoredQueries ||
			!slices.Equal(s.Baseline.Measures, results[0].Baseline.Measures) {
			shared = false
		}
	}
	var b strings.Builder
	if shared {
		fmt.Fprintf(&b, "reference: %s (%s)\n\n", names[0], summary.Count(results[0].Counts.ScoredQueries, "query", "queries"))
	} else {
		fmt.Fprintf(&b, "reference: %s, scored on each run's own queries (--only-run-queries): every column pair uses one query set\n\n", names[0])
	}
	pHead, holm := "p", false
	if cmp := results[0].Comparison; cmp != nil && cmp.HolmComparisons > 1 {
		pHead, holm = fmt.Sprintf("p (Holm, %d comparisons)", cmp.HolmComparisons), true
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "measure")
	if shared {
		fmt.Fprint(tw, "\t"+names[0])
	}
	for i, r := range names[1:] {
		if !shared {
			fmt.Fprintf(tw, "\treference on its %s", summary.Count(results[i].Counts.ScoredQueries, "query", "queries"))
		}
		fmt.Fprintf(tw, "\t%s\tΔ\t95%% CI\t%s", r, pHead)
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
				pv := mc.PValue
				if holm {
					pv = mc.PValueHolm
				}
				if pv != nil {
					p = summary.FormatP(*pv)
				}
			}
			if !shared {
				fmt.Fprintf(tw, "\t%s", summary.FormatValue(ref))
			}
			delta := summary.Signed(v.Value - ref.Value)
			if v.Kind != "mean" {
				delta = fmt.Sprintf("%+.0f", v.Value-ref.Value)
			}
			fmt.Fprintf(tw, "\t%s\t%s\t%s\t%s", summary.FormatValue(v), minus(delta), ci, p)
		}
		fmt.Fprintln(tw)
	}
	writeRetrievalRows(tw, shared, results)
	tw.Flush()
	writeRetrievers(&b, names, results)
	writeOrderings(&b, results)
	_, err := fmt.Fprint(c.App.Writer, b.String())
	return err
}

// minus writes a signed number's minus sign as the tables do.
func minus(s string) string { return strings.Replace(s, "-", "−", 1) }

// systemRetrievals returns each system's live retrieval (nil for a run
// file), the reference's first.
func systemRetrievals(results []*summary.Summary) []*summary.Retrieval {
	out := []*summary.Retrieval{results[0].Baseline.Retrieval}
	for _, s := range results {
		out = append(out, s.Retrieval)
	}
	return out
}

// writeRetrievalRows adds the rows of latency and failed queries, when a
// system is a retriever: "–" for a run file, Δ where both are retrievers.
func writeRetrievalRows(tw *tabwriter.Writer, shared bool, results []*summary.Summary) {
	rs := systemRetrievals(results)
	if !slices.ContainsFunc(rs, func(r *summary.Retrieval) bool { return r != nil }) {
		return
	}
	latency := func(pick func(summary.Latency) float64) func(*summary.Retrieval) (float64, string) {
		return func(r *summary.Retrieval) (float64, string) { x := pick(r.Latency); return x, fmt.Sprintf("%.1f", x) }
	}
	rows := []struct {
		name  string
		value func(*summary.Retrieval) (float64, string)
		delta string // format of the difference
	}{
		{"latency p50 (ms)", latency(func(l summary.Latency) float64 { return l.P50 }), "%+.1f"},
		{"latency p95 (ms)", latency(func(l summary.Latency) float64 { return l.P95 }), "%+.1f"},
		{"latency p99 (ms)", latency(func(l summary.Latency) float64 { return l.P99 }), "%+.1f"},
		{"failed queries", func(r *summary.Retrieval) (float64, string) { return float64(r.Failed), fmt.Sprint(r.Failed) }, "%+.0f"},
	}
	cell := func(r *summary.Retrieval, value func(*summary.Retrieval) (float64, string)) string {
		if r == nil {
			return "–"
		}
		_, s := value(r)
		return s
	}
	for _, row := range rows {
		fmt.Fprint(tw, row.name)
		ref := rs[0]
		if shared {
			fmt.Fprintf(tw, "\t%s", cell(ref, row.value))
		}
		for _, r := range rs[1:] {
			if !shared {
				fmt.Fprintf(tw, "\t%s", cell(ref, row.value))
			}
			delta := ""
			if ref != nil && r != nil {
				x, _ := row.value(r)
				y, _ := row.value(ref)
				delta = minus(fmt.Sprintf(row.delta, x-y))
			}
			fmt.Fprintf(tw, "\t%s\t%s\t\t", cell(r, row.value), delta)
		}
		fmt.Fprintln(tw)
	}
}

// writeRetrievers writes a line per retriever on what it cost, and the
// queries it failed (allowed by --max-failed-queries; they score 0).
func writeRetrievers(b *strings.Builder, names []string, results []*summary.Summary) {
	first := true
	for i, r := range systemRetrievals(results) {
		if r == nil {
			continue
		}
		if first {
			b.WriteString("\nretrievers:\n")
			first = false
		}
		fmt.Fprintf(b, "  %s: %s, %s\n", names[i], r.Retriever.Path, r.Line())
		for _, f := range r.FailedQueries {
			fmt.Fprintf(b, "    failed (scores 0): %s: %s\n", f.QueryID, f.Error)
		}
		if n := r.Failed - int64(len(r.FailedQueries)); n > 0 {
			fmt.Fprintf(b, "    … and %d more failed\n", n)
		}
	}
}

// writeOrderings prints, with --judgments, each measure's values filled
// in and how far the systems' order changes (Kendall's τ-b).
func writeOrderings(b *strings.Builder, results []*summary.Summary) {
	j := results[0].Judgments
	if j == nil || len(j.Orderings) == 0 {
		return
	}
	fmt.Fprintf(b, "\nwith LLM judgments: %s\n", j.Line())
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "measure\treference (filled)")
	for i := range results {
		fmt.Fprintf(tw, "\tsystem %d (filled)", i+2)
	}
	fmt.Fprintln(tw, "\tKendall τ-b, human vs filled order")
	for _, o := range j.Orderings {
		i := slices.IndexFunc(results[0].Measures, func(m summary.Measure) bool { return m.Name == o.Measure })
		fmt.Fprintf(tw, "%s\t%s", o.Measure, summary.FormatValue(results[0].Filled.Baseline.Measures[i]))
		for _, s := range results {
			fmt.Fprintf(tw, "\t%s", summary.FormatValue(s.Filled.Measures[i]))
		}
		tau := "undefined"
		if o.Tau != nil {
			tau = fmt.Sprintf("%.2f", *o.Tau)
		}
		fmt.Fprintf(tw, "\t%s\n", tau)
	}
	tw.Flush()
	b.WriteString("LLM labels agree with people less among close systems: a τ below 1 means the filled-in order differs.\n")
}
