package coordinator

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/perquery"
	"github.com/evalgate/evalgate/retrieval"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/summary"
)

// Input is one input file.
type Input struct {
	Path   string
	Format schema.Format // FormatAuto: detect
}

// Job describes one evaluation.
type Job struct {
	Gold, Run Input
	// Baseline, if its Path is set, is a second run scored in the same job
	// and compared with Run query by query (Metric.Paired or
	// Metric.Pairing must then be set).
	Baseline Input
	Metric   metric.Config
	Ingest   ingest.Config
	Read     schema.Options
	// PerQuery, if set, creates the writer that receives every scored
	// query's values in input order. If the run must be read a second time
	// (it is not grouped by query), the first writer is aborted and
	// PerQuery is called again.
	PerQuery func() (perquery.Writer, error)
	// Retriever, if set, makes the job a live retrieval: the run is the
	// retriever's answers to the gold queries, asked during the job, and
	// Run stays empty.
	Retriever *Retriever
	// SaveRun, if set, receives a live retrieval's answered queries in
	// gold order once the job succeeded (--save-run), with the retriever
	// file's name.
	SaveRun func(retrieverFile string, recs []*retrieval.Record) error
	// Fill, if set, also evaluates the job with LLM judgments filled into
	// the gold set (Summary.Filled).
	Fill *Fill
	// Judge, if set, makes the job the LLM judging of its run's holes
	// instead of its scoring (RunDistributed only; Outcome.Judge).
	Judge  *Judge
	Logger zerolog.Logger

	filling *Fill // set on the filled-in evaluation itself: load the gold set filled
}

// Validate checks the job.
func (j *Job) Validate() error {
	if j.Gold.Path == "" {
		return errors.New("job: no gold set")
	}
	switch {
	case j.Run.Path == "" && j.Retriever == nil:
		return errors.New("job: no run")
	case j.Run.Path != "" && j.Retriever != nil:
		return errors.New("job: a run file and a retriever: give one")
	case j.Retriever != nil && j.Retriever.Config == nil:
		return errors.New("job: a retriever without its file")
	case j.Retriever != nil && j.Ingest.Strict:
		return errors.New("job: --strict applies to run files, not to a retriever's answers")
	case j.Judge != nil && (j.Retriever != nil || j.Fill != nil || j.Baseline.Path != ""):
		return errors.New("job: a judge job judges a run file, alone")
	case j.Judge != nil && (j.Judge.LLM == nil || j.Judge.Corpus == "" || j.Judge.Depth < 1):
		return errors.New("job: a judge job needs its LLM file, a corpus and a depth of at least 1")
	}
	if j.Ingest.Depth < 0 {
		return fmt.Errorf("job: depth %d is negative", j.Ingest.Depth)
	}
	if j.Ingest.RelLevel != j.Metric.RelLevel {
		return fmt.Errorf("job: relevance level %d for ingest and %d for scoring", j.Ingest.RelLevel, j.Metric.RelLevel)
	}
	if j.Ingest.JudgedOnly != j.Metric.JudgedOnly {
		return fmt.Errorf("job: judged documents only %t for ingest and %t for scoring", j.Ingest.JudgedOnly, j.Metric.JudgedOnly)
	}
	if paired := j.Metric.Paired || j.Metric.Pairing != nil; paired != (j.Baseline.Path != "") {
		return errors.New("job: a baseline run and a paired metric configuration go together")
	}
	return j.Metric.Validate()
}

// Outcome is the result of a job.
type Outcome struct {
	Summary *summary.Summary
	Partial *metric.Partial
	Stats   ingest.Stats

	// Judge is a judge job's outcome (Job.Judge).
	Judge *JudgeOutcome

	fill fillCounts // of a filled-in evaluation
}

// resolveFormat returns the format a file will be read as.
func resolveFormat(in Input) (schema.Format, error) {
	if in.Format != schema.FormatAuto {
		return in.Format, nil
	}
	return schema.DetectFormat(in.Path)
}

// loadGold reads the gold set, with the judgments filled in when the job
// is the filled-in evaluation (their counts are then in fill).
func loadGold(ctx context.Context, job *Job, fill *fillCounts) (*ingest.Gold, error) {
	g, err := loadHumanGold(ctx, job)
	if err != nil || job.filling == nil {
		return g, err
	}
	g, *fill, err = loadFilledGold(ctx, job, g)
	return g, err
}

// loadHumanGold reads the gold file.
func loadHumanGold(ctx context.Context, job *Job) (*ingest.Gold, error) {
	opts := job.Read
	opts.Format = job.Gold.Format
	r, err := schema.Open(ctx, job.Gold.Path, schema.RoleGold, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	g, err := ingest.LoadGold(ctx, r)
	if err != nil {
		return nil, err
	}
	if g.NumQueries() == 0 {
		// Every mean would be 0 over 0 queries: an empty or wrong file,
		// never a result to gate a release on.
		return nil, &schema.InputError{File: job.Gold.Path, Err: fmt.Errorf("%w: the gold set has no queries", schema.ErrNoData)}
	}
	return g, nil
}

// SummaryConfig is the configuration the job's summary will record: its
// choices that change values.
func SummaryConfig(job *Job) summary.Config {
	avg := "gold-queries"
	if job.Ingest.OnlyRunQueries {
		avg = "run-queries"
	}
	return summary.Config{
		Measures:       metric.Names(job.Metric.Measures),
		RelLevel:       job.Metric.RelLevel,
		RankBy:         job.Ingest.RankBy.String(),
		Depth:          job.Ingest.Depth,
		Averaging:      avg,
		SkipNoRelevant: job.Ingest.SkipNoRelevant,
		Strict:         job.Ingest.Strict,
		JudgedOnly:     job.Metric.JudgedOnly,
	}
}

func digestString(d [2]uint64) string {
	var b [16]byte
	for i := 0; i < 8; i++ {
		b[i] = byte(d[1] >> (56 - 8*i))
		b[8+i] = byte(d[0] >> (56 - 8*i))
	}
	return "xxh3-128-sum:" + hex.EncodeToString(b[:])
}

// loadBaseline joins the job's baseline run, if any.
func loadBaseline(ctx context.Context, job *Job, gold *ingest.Gold) (*ingest.Baseline, error) {
	if job.Baseline.Path == "" {
		return nil, nil
	}
	t0 := time.Now()
	b, err := ingest.NewJoiner(gold, job.Ingest).LoadBaseline(ctx, func() (schema.Reader, error) {
		opts := job.Read
		opts.Format = job.Baseline.Format
		opts.ReuseMemory = true // the join keeps nothing of a released batch
		opts.SkipRanks = job.Ingest.RankBy == ingest.RankByScore
		return schema.Open(ctx, job.Baseline.Path, schema.RoleRun, opts)
	})
	if err != nil {
		return nil, err
	}
	if st := b.Result.Stats; st.RunQueries == st.RunOnlyQueries {
		return nil, &schema.InputError{File: job.Baseline.Path, Err: noOverlap("baseline run", st)}
	}
	job.Logger.Info().Dur("took", time.Since(t0)).Msg("baseline run loaded")
	return b, nil
}

// noOverlap says that a run shares no query with the gold set: every mean
// would be 0, which is a wrong file or mismatched query ids far more often
// than a retriever's result (trec_eval refuses it too).
func noOverlap(what string, st ingest.Stats) error {
	if st.RunQueries == 0 {
		return fmt.Errorf("%w: the %s has no queries", schema.ErrNoData, what)
	}
	which := fmt.Sprintf("none of the %s's %d queries (first %q) is", what, st.RunQueries, st.RunOnlyExample)
	if st.RunQueries == 1 {
		which = fmt.Sprintf("the %s's one query, %q, is not", what, st.RunOnlyExample)
	}
	return fmt.Errorf("%w: %s in the gold set: check that both files use the same query ids", schema.ErrNoData, which)
}

// checkScored refuses a result over no query at all.
func checkScored(job *Job, st ingest.Stats) error {
	if st.RunQueries == st.RunOnlyQueries {
		if job.Retriever != nil {
			return fmt.Errorf("%w: the retriever answered none of the %d queries", ErrQueriesFailed, st.MissingFromRun)
		}
		return &schema.InputError{File: job.Run.Path, Err: noOverlap("run", st)}
	}
	if st.ScoredQueries == 0 { // every query left out by --skip-no-relevant
		return &schema.InputError{File: job.Gold.Path, Err: fmt.Errorf("%w: no query left to score: none of the run's queries has a relevant document (--skip-no-relevant)", schema.ErrNoData)}
	}
	return nil
}

// outcome is what a finished job knows, for its summary.
type outcome struct {
	goldDigest string
	gold       *ingest.Gold // nil when resuming a finished job (no query texts)
	run        ingest.Stats
	runDigest  string
	base       *ingest.Stats
	baseDigest string
	partial    *metric.Partial
	live       *summary.Retrieval // a live retrieval's costs and latencies
}

// buildSummary assembles the summary of a finished job: the same function
// for local and distributed jobs, so their summaries are the same bytes.
func buildSummary(job *Job, o outcome, exec summary.Execution) (*summary.Summary, error) {
	if err := checkScored(job, o.run); err != nil {
		return nil, err
	}
	gf, err := resolveFormat(job.Gold)
	if err != nil {
		return nil, err
	}
	run := summary.Input{Path: job.Run.Path, Digest: o.runDigest}
	if job.Retriever != nil {
		run.Path, run.Format = job.Retriever.Config.File, FormatRetriever
	} else {
		rf, err := resolveFormat(job.Run)
		if err != nil {
			return nil, err
		}
		run.Format = rf.String()
	}
	inputs := summary.Inputs{
		Gold: summary.Input{Path: job.Gold.Path, Format: gf.String(), Digest: o.goldDigest},
		Run:  run,
	}
	cfg := SummaryConfig(job)
	results := o.partial.Reduce()
	s := summary.Build(inputs, cfg, o.run, results, exec)
	if run, base := o.partial.Curve(); run != nil {
		s.RecallCurve = &summary.Curve{Run: run, Baseline: base}
	}
	if o.base != nil {
		bf, err := resolveFormat(job.Baseline)
		if err != nil {
			return nil, err
		}
		// The baseline is scored on the run's queries: its counts and
		// warnings say so, not what a join over every gold query saw.
		bst := summary.BaselineCounts(*o.base, o.run)
		b := &summary.Baseline{
			Input:    summary.Input{Path: job.Baseline.Path, Format: bf.String(), Digest: o.baseDigest},
			Counts:   summary.CountsOf(bst),
			Groups:   []summary.Group{},
			Warnings: summary.BaselineWarnings(cfg, bst),
		}
		for _, gr := range results {
			if gr.Name == metric.Overall {
				b.Measures = summary.Measures(gr.BaseValues)
				continue
			}
			tag, value, _ := strings.Cut(gr.Name, "=")
			b.Groups = append(b.Groups, summary.Group{Tag: tag, Value: value, Queries: gr.Queries, Measures: summary.Measures(gr.BaseValues)})
		}
		s.Baseline = b
	}
	if cs := o.partial.Comparisons(); cs != nil {
		s.Comparison = comparison(job, o, cs)
	}
	s.Retrieval = o.live
	return s, nil
}

func comparison(job *Job, o outcome, cs []metric.Comparison) *summary.Comparison {
	p := job.Metric.Pairing
	c := &summary.Comparison{
		Method:     "Poisson bootstrap of the mean difference (percentile interval); paired sign-flip randomization test (two-sided)",
		Confidence: 0.95, Replicates: p.Replicates, Permutations: p.Permutations, Seed: p.Seed,
		Regressed: []summary.RegressedQuery{},
	}
	results := o.partial.Reduce()
	value := func(vs []metric.Value, m metric.Measure) float64 {
		for _, v := range vs {
			if v.Measure == m {
				return v.Value
			}
		}
		return 0
	}
	opt := func(x float64) *float64 {
		if math.IsNaN(x) {
			return nil
		}
		return &x
	}
	measures := func(gr metric.GroupResult, cs []metric.Comparison) []summary.MeasureComparison {
		out := make([]summary.MeasureComparison, 0, len(cs))
		for _, mc := range cs {
			v, b := value(gr.Values, mc.Measure), value(gr.BaseValues, mc.Measure)
			out = append(out, summary.MeasureComparison{Name: mc.Measure.String(), Value: v, Baseline: b,
				Delta: v - b, CILow: opt(mc.CILow), CIHigh: opt(mc.CIHigh), PValue: opt(mc.PValue)})
		}
		return out
	}
	c.Measures = measures(results[0], cs)
	for _, gr := range results[1:] {
		if gcs := o.partial.GroupComparisons(gr.Name); gcs != nil {
			tag, val, _ := strings.Cut(gr.Name, "=")
			c.Groups = append(c.Groups, summary.GroupComparison{Tag: tag, Value: val, Queries: gr.Queries, Measures: measures(gr, gcs)})
		}
	}
	if p.TopK > 0 {
		c.RegressedMeasure = job.Metric.Measures[p.Measures[0]].String()
		for _, q := range o.partial.TopRegressed() {
			rq := summary.RegressedQuery{QueryID: q.QueryID, Value: q.Value, Baseline: q.Base, Rank: int(q.FirstRel), BaselineRank: int(q.BaseFirstRel)}
			if o.gold != nil {
				if gi := o.gold.Lookup(q.QueryID); gi >= 0 {
					rq.Query = o.gold.QueryText(gi)
				}
			}
			c.Regressed = append(c.Regressed, rq)
		}
	}
	return c
}

func execution(mode string, workers, shards int, job string, start time.Time) summary.Execution {
	return summary.Execution{
		Mode:           mode,
		Workers:        workers,
		Shards:         shards,
		Job:            job,
		StartedAt:      start.UTC().Format(time.RFC3339Nano),
		ElapsedSeconds: time.Since(start).Seconds(),
	}
}
