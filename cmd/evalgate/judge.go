package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/judgment"
	"github.com/evalgate/evalgate/llm"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/retrieval"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/summary"
)

func judgeCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "gold", Aliases: []string{"g"}, Usage: "gold set (required), with query texts: TREC qrels, JSONL, Arrow IPC or Parquet"},
		&cli.StringFlag{Name: "run", Aliases: []string{"r"}, Usage: "the run whose top documents to judge (this, or --retriever)"},
		&cli.StringFlag{Name: "retriever", Usage: "ask this retriever (docs/retrievers.md) for every gold query, and judge its answers (instead of --run)"},
		&cli.StringFlag{Name: "corpus", Usage: "the documents (required): JSONL (doc_id/id/_id, text/contents/body, title), collection.tsv (id<TAB>text) or Parquet; .gz works"},
		&cli.StringFlag{Name: "llm", Usage: "the LLM file (required): an OpenAI-compatible server, model and prompt (docs/judging.md)"},
		&cli.IntFlag{Name: "depth", Value: 10, Usage: "judge the top N documents of each query's ranking"},
		&cli.StringFlag{Name: "out", Usage: "write the judgments here (required): JSONL, one per graded pair; give it to score, run and gate with --judgments"},
		&cli.IntFlag{Name: "rejudge", Usage: "also grade N pairs the gold set judges (a sample stratified by grade) and report how far the LLM agrees"},
		&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seed of the --rejudge sample"},
		&cli.Int64Flag{Name: "max-tokens", Usage: "stop once the tokens billed reach N (the judgments made are kept); 0: no limit"},
		&cli.IntFlag{Name: "pairs-per-task", Value: coordinator.DefaultPairsPerTask, Usage: "pairs per task"},
		&cli.StringFlag{Name: "summary-out", Usage: "also write the judging report (counts, failures, tokens, agreement) as JSON"},
		&cli.StringFlag{Name: "gold-format", Value: "auto", Usage: "auto, trec, jsonl, arrow, arrow-stream or parquet"},
		&cli.StringFlag{Name: "run-format", Value: "auto", Usage: "auto, trec, jsonl, arrow, arrow-stream or parquet"},
		&cli.StringFlag{Name: "rank-by", Value: "score", Usage: "how --run ranks: score (descending, trec_eval's tie-break) or rank (the rank column)"},
		&cli.IntFlag{Name: "rel-level", Value: 1, Usage: "smallest grade that counts as relevant, for the binarised agreement"},
	}
	flags = append(flags, natsFlags()...)
	flags = append(flags, topologyFlags()...)
	qf := queueFlags("kept across runs, it keeps the cache of judgments too")
	for _, f := range qf {
		if sf, ok := f.(*cli.StringFlag); ok && sf.Name == "store" {
			sf.Aliases = []string{"cache-dir"}
		}
	}
	flags = append(flags, qf...)
	return &cli.Command{
		Name:  "judge",
		Usage: "grade the unjudged documents of a run's top k with an LLM, on the workers, each pair once",
		Description: "Every (query, document) pair of the top --depth of each query's ranking that the gold set does not judge " +
			"is graded by the LLM of --llm on the 0–3 scale, through the queue (embedded JetStream and in-process workers, or --nats). " +
			"Judgments are cached by model, prompt, query and passage: a rerun pays only for new pairs. " +
			"Exit code 0 when the job ran (failed pairs are counted and named), 2 on bad input, 3 when it could not run.",
		Flags:  markRequired(flags, "gold", "corpus", "llm", "out"),
		Action: judgeAction,
	}
}

func judgeAction(c *cli.Context) error {
	log, err := logger(c)
	if err != nil {
		return err
	}
	logFatalErrors(c)
	if err := required(c, "gold", "corpus", "llm", "out"); err != nil {
		return err
	}
	if c.IsSet("run") == c.IsSet("retriever") {
		return usagef("give --run or --retriever: the ranking whose top documents to judge")
	}
	if c.String("resume") != "" {
		return usagef("judge does not resume: run it again, and the judgments already made come from the cache")
	}
	if c.Int("depth") < 1 || c.Int("rejudge") < 0 || c.Int64("max-tokens") < 0 || c.Int("pairs-per-task") < 1 {
		return usagef("--depth and --pairs-per-task want at least 1, --rejudge and --max-tokens 0 or more")
	}
	if err := checkFileFlags(c); err != nil {
		return err
	}
	for _, f := range []string{"gold", "run", "retriever", "corpus", "llm"} {
		if p := c.String(f); p != "" {
			if _, err := os.Stat(p); err != nil {
				return inputf("read %s: %w", p, pathCause(err))
			}
		}
	}
	if err := checkOutputs(map[string]string{"out": c.String("out"), "summary-out": c.String("summary-out")}, nil); err != nil {
		return err
	}
	cfg, err := llm.Load(c.String("llm"), os.LookupEnv)
	if err != nil {
		return err
	}
	job, err := judgeJob(c, cfg)
	if err != nil {
		return err
	}
	job.Logger = log
	qs, err := openQueueSession(c, log)
	if err != nil {
		return err
	}
	defer qs.close()
	if c.IsSet("retriever") {
		run, cleanup, err := retrieveForJudging(c, qs, job)
		if err != nil {
			return err
		}
		defer cleanup()
		job.Run = run
	}
	bar, err := newProgress(c.String("progress"), c.App.ErrWriter, log)
	if err != nil {
		return err
	}
	out, err := coordinator.RunDistributed(c.Context, job, qs.conn, coordinator.DistOptions{Shards: qs.shards, Timeout: qs.timeout,
		TimeoutFrom: qs.started, Progress: func(p coordinator.Progress) { bar.update(p); qs.metrics.progress(p) },
		Metrics: qs.metrics.coordinator()})
	bar.finish()
	qs.halt()
	if err != nil {
		return err
	}
	return writeJudging(c, out.Judge)
}

// judgeJob builds the judge job from the flags.
func judgeJob(c *cli.Context, cfg *llm.Config) (coordinator.Job, error) {
	gf, err := schema.ParseFormat(c.String("gold-format"))
	if err != nil {
		return coordinator.Job{}, usageError{fmt.Errorf("--gold-format: %w", err)}
	}
	rf, err := schema.ParseFormat(c.String("run-format"))
	if err != nil {
		return coordinator.Job{}, usageError{fmt.Errorf("--run-format: %w", err)}
	}
	rankBy, err := ingest.ParseRankBy(c.String("rank-by"))
	if err != nil {
		return coordinator.Job{}, usageError{err}
	}
	if c.Int("rel-level") < 0 {
		return coordinator.Job{}, usagef("--rel-level %d: want 0 or more", c.Int("rel-level"))
	}
	level := int32(c.Int("rel-level"))
	return coordinator.Job{
		Gold:   coordinator.Input{Path: c.String("gold"), Format: gf},
		Run:    coordinator.Input{Path: c.String("run"), Format: rf},
		Metric: metric.Config{Measures: metric.DefaultMeasures(), RelLevel: level},
		Ingest: ingest.Config{RelLevel: level, RankBy: rankBy},
		Judge: &coordinator.Judge{LLM: cfg, Corpus: c.String("corpus"), Depth: c.Int("depth"), Rejudge: c.Int("rejudge"),
			Seed: c.Uint64("seed"), MaxTokens: c.Int64("max-tokens"), PairsPerTask: c.Int("pairs-per-task")},
	}, nil
}

// retrieveForJudging asks the retriever for every gold query through the
// session's queue and returns its answers as a run in list order (a
// temporary file, removed by cleanup).
func retrieveForJudging(c *cli.Context, qs *queueSession, judge coordinator.Job) (coordinator.Input, func(), error) {
	cfg, err := loadRetrieverFile(c.String("retriever"))
	if err != nil {
		return coordinator.Input{}, nil, err
	}
	job := judge
	job.Judge, job.Run = nil, coordinator.Input{}
	job.Retriever = &coordinator.Retriever{Config: cfg}
	f, err := os.CreateTemp("", "evalgate-judge-run-*.jsonl")
	if err != nil {
		return coordinator.Input{}, nil, fmt.Errorf("create the retrieved run: %w", err)
	}
	cleanup := func() { os.Remove(f.Name()) }
	job.SaveRun = func(_ string, recs []*retrieval.Record) error {
		plain := make([]*retrieval.Record, len(recs))
		for i, r := range recs {
			p := *r
			p.Scores = nil // the list order is the ranking
			plain[i] = &p
		}
		return retrieval.WriteRun(f, schema.FormatJSONL, "", plain)
	}
	_, err = coordinator.RunDistributed(c.Context, job, qs.conn, coordinator.DistOptions{Shards: qs.shards, Timeout: qs.timeout, TimeoutFrom: qs.started})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		cleanup()
		return coordinator.Input{}, nil, err
	}
	return coordinator.Input{Path: f.Name(), Format: schema.FormatJSONL}, cleanup, nil
}

// judgingReport is the JSON of --summary-out: everything but the
// judgments themselves (they are in --out).
type judgingReport struct {
	Holes            int64                      `json:"holes"`
	Rejudged         int64                      `json:"rejudged"`
	Judged           int                        `json:"judged"`
	Cached           int64                      `json:"cached"`
	Failed           []coordinator.JudgeFailure `json:"failed"`
	MissingPairs     int64                      `json:"missing_pairs"`
	MissingDocs      []string                   `json:"missing_docs"`
	PromptTokens     int64                      `json:"prompt_tokens"`
	CompletionTokens int64                      `json:"completion_tokens"`
	Stopped          bool                       `json:"stopped_by_token_budget"`
	Agreement        *summary.Agreement         `json:"agreement,omitempty"`
}

// writeJudging writes the judgments and the report, then prints it.
func writeJudging(c *cli.Context, jo *coordinator.JudgeOutcome) error {
	var files fileSet
	var b bytes.Buffer
	if err := judgment.Write(&b, jo.Judgments); err != nil {
		return err
	}
	files.add(c.String("out"), b.Bytes())
	if p := c.String("summary-out"); p != "" {
		rep := judgingReport{Holes: jo.Holes, Rejudged: jo.Rejudged, Judged: len(jo.Judgments), Cached: jo.Cached, Failed: jo.Failed,
			MissingPairs: jo.MissingPairs, MissingDocs: jo.MissingDocs, PromptTokens: jo.PromptTokens,
			CompletionTokens: jo.CompletionTokens, Stopped: jo.Stopped, Agreement: jo.Agreement}
		if rep.MissingDocs == nil {
			rep.MissingDocs = []string{}
		}
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		files.add(p, append(data, '\n'))
	}
	if err := files.write(); err != nil {
		return err
	}
	_, err := io.WriteString(c.App.Writer, judgingText(c.String("out"), jo))
	return err
}

// judgingText is the printed report.
func judgingText(out string, jo *coordinator.JudgeOutcome) string {
	var b strings.Builder
	fmt.Fprintf(&b, "evalgate judge: %s graded (%d unjudged in the top ranks, %d re-judged); %d taken from the cache; %s written to %s\n",
		summary.Count(int64(len(jo.Judgments)), "pair", "pairs"), jo.Holes, jo.Rejudged, jo.Cached,
		summary.Count(int64(len(jo.Judgments)), "judgment", "judgments"), out)
	fmt.Fprintf(&b, "tokens billed: %d (prompt %d, completion %d)\n", jo.PromptTokens+jo.CompletionTokens, jo.PromptTokens, jo.CompletionTokens)
	if jo.Stopped {
		b.WriteString("stopped: the token budget (--max-tokens) is spent; pairs not graded are left for a rerun (the cache keeps what was paid for)\n")
	}
	if jo.MissingPairs > 0 {
		fmt.Fprintf(&b, "not judged: %s whose document the corpus lacks (%d documents, e.g. %s)\n",
			summary.Count(jo.MissingPairs, "pair", "pairs"), len(jo.MissingDocs), strings.Join(jo.MissingDocs[:min(5, len(jo.MissingDocs))], ", "))
	}
	if n := len(jo.Failed); n > 0 {
		fmt.Fprintf(&b, "failed: %s got no grade (never counted as 0):\n", summary.Count(int64(n), "pair", "pairs"))
		for _, f := range jo.Failed[:min(10, n)] {
			fmt.Fprintf(&b, "  %s %s: %s\n", f.QueryID, f.DocID, f.Error)
		}
		if n > 10 {
			fmt.Fprintf(&b, "  … and %d more (--summary-out lists them all)\n", n-10)
		}
	}
	if a := jo.Agreement; a != nil {
		b.WriteString(agreementText(a))
	}
	return b.String()
}

// agreementText prints the agreement of re-judged pairs.
func agreementText(a *summary.Agreement) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nagreement with the gold set on %s: same grade %.1f%%, Cohen's κ %s on the grade scale, %s at grade ≥ %d\n",
		summary.Count(a.Pairs, "re-judged pair", "re-judged pairs"), 100*a.Observed, kappaText(a.Kappa), kappaText(a.KappaBinary), a.RelLevel)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "human \\ LLM\t")
	for g := a.MinGrade; g <= a.MaxGrade; g++ {
		fmt.Fprintf(tw, "%d\t", g)
	}
	fmt.Fprintln(tw)
	for h, row := range a.Matrix {
		fmt.Fprintf(tw, "%d\t", a.MinGrade+h)
		for _, n := range row {
			fmt.Fprintf(tw, "%d\t", n)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if a.Note != "" {
		fmt.Fprintf(&b, "(%s)\n", a.Note)
	}
	b.WriteString("LLM labels agree with people less among close systems, where a release gate decides (docs/judging.md).\n")
	return b.String()
}

func kappaText(k *float64) string {
	if k == nil {
		return "undefined"
	}
	return fmt.Sprintf("%.2f", *k)
}
