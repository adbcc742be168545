package coordinator

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/apache/arrow/go/v16/arrow"

	"github.com/evalgate/evalgate/agreement"
	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/judgment"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/retrieval"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/summary"
)

// Fill is LLM judgments (`evalgate judge --out`) to fill into the gold set:
// the job is evaluated with the human judgments only (its summary) and
// again with the LLM judgments added where the gold set judges nothing
// (Summary.Filled). A human judgment always wins; a re-judged pair (it
// has a human grade) never fills.
type Fill struct {
	Files     []string
	Judgments *judgment.Set
}

// fillCounts says what the judgments did to the gold set.
type fillCounts struct {
	filled, humanWins, unknownQueries, rejudged int64
	models                                      []string
}

// fillRows returns the gold rows the judgments add to gold: judgments of
// queries gold has, of documents it does not judge, not re-judged.
func fillRows(gold *ingest.Gold, set *judgment.Set) (*schema.Batch, fillCounts) {
	var c fillCounts
	qids := schema.NewStrings(len(set.Judgments), 0)
	docs := schema.NewStrings(len(set.Judgments), 0)
	var grades []int32
	var lines []int64
	for i, j := range set.Judgments {
		if j.Model != "" && !slices.Contains(c.models, j.Model) {
			c.models = append(c.models, j.Model)
		}
		gi := gold.Lookup(j.QueryID)
		switch {
		case j.Rejudged():
			c.rejudged++
			continue
		case gi < 0:
			c.unknownQueries++
			continue
		case judged(gold, gi, j.DocID):
			c.humanWins++
			continue
		}
		c.filled++
		qids.Append(j.QueryID)
		docs.Append(j.DocID)
		grades = append(grades, int32(j.Grade))
		lines = append(lines, int64(i+1))
	}
	slices.Sort(c.models)
	rec := schema.NewRecord(schema.GoldLong(), []arrow.Array{qids.Array(), docs.Array(), schema.Int32Array(grades, nil)}, len(grades))
	return &schema.Batch{Record: rec, Form: schema.FormGoldLong, File: "judgments", Lines: lines}, c
}

// judged reports whether the gold set judges doc for query gi.
func judged(gold *ingest.Gold, gi int32, doc string) bool {
	for k := range gold.Grades(gi) {
		if gold.Doc(gi, k) == doc {
			return true
		}
	}
	return false
}

// fillReader reads a gold file, then the rows the judgments add.
type fillReader struct {
	schema.Reader
	extra *schema.Batch
}

func (f *fillReader) Next(ctx context.Context) (*schema.Batch, error) {
	b, err := f.Reader.Next(ctx)
	if err != io.EOF {
		return b, err
	}
	if f.extra == nil {
		return nil, io.EOF
	}
	b, f.extra = f.extra, nil
	return b, nil
}

func (f *fillReader) Close() error {
	if f.extra != nil {
		f.extra.Release()
	}
	return f.Reader.Close()
}

// loadFilledGold reads the gold set with the job's judgments filled in.
func loadFilledGold(ctx context.Context, job *Job, human *ingest.Gold) (*ingest.Gold, fillCounts, error) {
	rows, counts := fillRows(human, job.filling.Judgments)
	opts := job.Read
	opts.Format = job.Gold.Format
	r, err := schema.Open(ctx, job.Gold.Path, schema.RoleGold, opts)
	if err != nil {
		rows.Release()
		return nil, counts, err
	}
	fr := &fillReader{Reader: r, extra: rows}
	defer fr.Close()
	g, err := ingest.LoadGold(ctx, fr)
	return g, counts, err
}

// scoreFilled evaluates the job again with its judgments filled in, in
// this process (a distributed job's values are the same bits), and adds
// the result to out's summary. A live retrieval's rankings come from its
// answers (recs), read as a run file in list order.
func scoreFilled(ctx context.Context, job Job, out *Outcome, recs []*retrieval.Record) error {
	j2 := job
	j2.Fill, j2.filling, j2.PerQuery, j2.SaveRun = nil, job.Fill, nil, nil
	if job.Retriever != nil {
		f, err := os.CreateTemp("", "evalgate-filled-*.jsonl")
		if err != nil {
			return fmt.Errorf("create the retrieved run for the filled-in evaluation: %w", err)
		}
		defer os.Remove(f.Name())
		plain := make([]*retrieval.Record, len(recs))
		for i, r := range recs {
			c := *r
			c.Scores = nil // the list order is the ranking
			plain[i] = &c
		}
		err = retrieval.WriteRun(f, schema.FormatJSONL, "", plain)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("write the retrieved run for the filled-in evaluation: %w", err)
		}
		j2.Retriever, j2.Run = nil, Input{Path: f.Name(), Format: schema.FormatJSONL}
	}
	o2, err := Score(ctx, j2)
	if err != nil {
		return err
	}
	fs := o2.Summary.Comparable()
	if job.Retriever != nil {
		fs.Inputs.Run = out.Summary.Inputs.Run
	}
	s := out.Summary
	s.Filled = fs
	s.Judgments = judgmentsSection(job.Fill, o2.fill, s, fs)
	a, err := rejudgedAgreement(ctx, &job, job.Fill.Judgments)
	if err != nil {
		return err
	}
	s.Judgments.Agreement = a
	return nil
}

// rejudgedAgreement compares the re-judged pairs' LLM grades with the
// gold set's (the file's human_grade when the gold set no longer judges
// the pair); nil without re-judged pairs.
func rejudgedAgreement(ctx context.Context, job *Job, set *judgment.Set) (*summary.Agreement, error) {
	var pairs []agreement.Pair
	var gold *ingest.Gold
	for _, j := range set.Judgments {
		if !j.Rejudged() {
			continue
		}
		if gold == nil {
			var err error
			if gold, err = loadHumanGold(ctx, job); err != nil {
				return nil, err
			}
		}
		h := *j.HumanGrade
		if gi := gold.Lookup(j.QueryID); gi >= 0 {
			if g, ok := gradeOf(gold, gi, j.DocID); ok {
				h = int(g)
			}
		}
		pairs = append(pairs, agreement.Pair{Human: h, LLM: j.Grade})
	}
	if len(pairs) == 0 {
		return nil, nil
	}
	return AgreementOf(pairs, 3, job.Ingest.RelLevel)
}

// judgmentsSection describes what the judgments did and how much of the
// top k each kind of judgment covers. With --judged-only there is no
// coverage: Judged@k then reads rankings condensed to their judged
// documents, differently with and without the fill, not the top k.
func judgmentsSection(f *Fill, c fillCounts, human, filled *summary.Summary) *summary.Judgments {
	j := &summary.Judgments{Files: f.Files, Judgments: int64(len(f.Judgments.Judgments)), Filled: c.filled,
		HumanWins: c.humanWins, UnknownQueries: c.unknownQueries, Rejudged: c.rejudged, Models: c.models}
	if j.Models == nil {
		j.Models = []string{}
	}
	if human.Config.JudgedOnly {
		return j
	}
	for _, m := range human.Measures {
		pm, err := metric.Parse(m.Name)
		if err != nil || pm.Kind != metric.KindJudged {
			continue
		}
		if fm, ok := filled.Value(m.Name); ok {
			j.Coverage = append(j.Coverage, summary.Coverage{Depth: pm.K, Human: m.Value, LLM: fm - m.Value, Unjudged: 1 - fm})
		}
	}
	return j
}

// JobOf rebuilds the job a saved summary was scored by (its inputs, as
// paths, and every option it records), to score it again: with LLM
// judgments filled in, for `gate --judgments`. A live retrieval cannot be
// rebuilt (its answers are not in the summary).
func JobOf(s *summary.Summary) (Job, error) {
	var job Job
	if s.Retrieval != nil || s.Inputs.Run.Format == FormatRetriever {
		return job, fmt.Errorf("%s is the summary of a live retrieval, whose answers it does not hold: score the run saved with --save-run (score --rank-by rank --judgments …)", s.Inputs.Run.Path)
	}
	input := func(in summary.Input) (Input, error) {
		f, err := schema.ParseFormat(in.Format)
		return Input{Path: in.Path, Format: f}, err
	}
	var err error
	if job.Gold, err = input(s.Inputs.Gold); err != nil {
		return job, err
	}
	if job.Run, err = input(s.Inputs.Run); err != nil {
		return job, err
	}
	cfg := s.Config
	ms, err := metric.ParseList(cfg.Measures)
	if err != nil {
		return job, err
	}
	rb, err := ingest.ParseRankBy(cfg.RankBy)
	if err != nil {
		return job, err
	}
	job.Metric = metric.Config{Measures: ms, RelLevel: cfg.RelLevel, JudgedOnly: cfg.JudgedOnly}
	if s.RecallCurve != nil {
		job.Metric.CurveDepth = len(s.RecallCurve.Run)
	}
	job.Ingest = ingest.Config{RelLevel: cfg.RelLevel, RankBy: rb, Depth: cfg.Depth, Strict: cfg.Strict,
		SkipNoRelevant: cfg.SkipNoRelevant, OnlyRunQueries: cfg.Averaging == "run-queries", JudgedOnly: cfg.JudgedOnly}
	if b := s.Baseline; b != nil {
		if job.Baseline, err = input(b.Input); err != nil {
			return job, err
		}
		job.Metric.Paired = true
		if c := s.Comparison; c != nil {
			p := &metric.Pairing{Replicates: c.Replicates, Permutations: c.Permutations, Seed: c.Seed, TopK: len(c.Regressed)}
			for _, mc := range c.Measures {
				if i := slices.IndexFunc(ms, func(m metric.Measure) bool { return m.String() == mc.Name }); i >= 0 {
					p.Measures = append(p.Measures, i)
				}
			}
			for _, g := range c.Groups {
				p.Groups = append(p.Groups, g.Tag+"="+g.Value)
			}
			job.Metric.Pairing = p
		}
	}
	return job, job.Validate()
}
