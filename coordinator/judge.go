package coordinator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/evalgate/evalgate/agreement"
	"github.com/evalgate/evalgate/corpus"
	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/judging"
	"github.com/evalgate/evalgate/judgment"
	"github.com/evalgate/evalgate/llm"
	"github.com/evalgate/evalgate/shard"
	"github.com/evalgate/evalgate/summary"
)

// DefaultPairsPerTask is the number of pairs of a judge task.
const DefaultPairsPerTask = 16

// Judge makes a job the LLM judging of its run's holes (`evalgate judge`):
// every (query, document) pair of the top Depth of each query's ranking
// that the gold set does not judge is graded by the LLM, each pair once,
// on the workers; Rejudge pairs the gold set does judge are graded too, to
// measure agreement. The job scores nothing: its outcome is the judgments
// (Outcome.Judge).
type Judge struct {
	// LLM is the LLM file, parsed with this process's environment.
	LLM *llm.Config
	// Corpus is the documents' file (package corpus reads it).
	Corpus     string
	CorpusOpts corpus.Options
	// Depth is how deep each ranking is judged.
	Depth int
	// Rejudge is the number of human-judged pairs graded again (a sample
	// stratified by grade, seeded by Seed).
	Rejudge int
	Seed    uint64
	// MaxTokens stops the job once the tokens billed reach it (0: no
	// limit): tasks not yet taken are dropped, the judgments made are kept.
	MaxTokens int64
	// PairsPerTask is the number of pairs per task (default
	// DefaultPairsPerTask).
	PairsPerTask int
}

// JudgeOutcome is what a judge job found and made.
type JudgeOutcome struct {
	// Judgments are the grades made or taken from the cache, sorted by
	// query and document; a re-judged pair has its human grade.
	Judgments []judgment.Judgment
	// Failed are the pairs that got no grade, with why.
	Failed []JudgeFailure
	// Holes counts the unjudged pairs of the run's top Depth; Rejudged
	// the human-judged pairs sampled to grade again.
	Holes, Rejudged int64
	// MissingDocs are the documents of those pairs the corpus lacks (not
	// judged), MissingPairs their pairs.
	MissingDocs  []string
	MissingPairs int64
	// Cached counts the judgments taken from the cache (nothing billed);
	// the tokens are those billed by this job.
	Cached                         int64
	PromptTokens, CompletionTokens int64
	// Stopped is set when the token budget stopped the job early.
	Stopped bool
	// Agreement compares the re-judged pairs' LLM grades with the human
	// ones; nil without re-judged pairs.
	Agreement *summary.Agreement
}

// JudgeFailure is a pair that got no grade.
type JudgeFailure struct {
	QueryID, DocID, Error string
}

func (j *Judge) pairsPerTask() int {
	if j.PairsPerTask > 0 {
		return j.PairsPerTask
	}
	return DefaultPairsPerTask
}

// judgePlan is what a judge job grades: the pairs, and what it cannot.
type judgePlan struct {
	pairs        []judging.Pair
	holes        int64
	rejudged     int64
	missingDocs  []string
	missingPairs int64
}

// planJudging finds the pairs to grade: the holes of the run's top Depth
// (ranked as the scores rank them), and the sample to re-judge; the
// passages come from the corpus. The plan depends only on the inputs, so a
// resumed job cuts the same tasks.
func planJudging(ctx context.Context, job *Job, gold *ingest.Gold) (*judgePlan, error) {
	jd := job.Judge
	var mu sync.Mutex
	ranked := map[int32][]string{}
	cfg := job.Ingest
	cfg.Depth = jd.Depth
	cfg.Ranked = func(gi int32, docs []string) {
		kept := make([]string, len(docs))
		for i, d := range docs {
			kept[i] = strings.Clone(d) // docs view the run's batches, reused once released
		}
		mu.Lock()
		ranked[gi] = kept
		mu.Unlock()
	}
	j := *job
	j.Ingest = cfg
	if _, err := joinRun(ctx, &j, gold, ingest.Handlers{}, false); errors.Is(err, ingest.ErrRunNotGrouped) {
		clear(ranked)
		if _, err := joinRun(ctx, &j, gold, ingest.Handlers{}, true); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	type ref struct {
		gi   int32
		rank int
		doc  string
		hole bool
	}
	var refs []ref
	var candidates []agreement.Judged
	for gi, docs := range ranked {
		for rank, d := range docs {
			if g, ok := gradeOf(gold, gi, d); ok {
				candidates = append(candidates, agreement.Judged{QueryID: gold.QueryID(gi), DocID: d, Grade: int(g)})
				continue
			}
			refs = append(refs, ref{gi, rank, d, true})
		}
	}
	plan := &judgePlan{holes: int64(len(refs))}
	if jd.Rejudge > 0 && len(candidates) > 0 {
		sample, err := agreement.Sample(candidates, jd.Rejudge, jd.Seed)
		if err != nil {
			return nil, fmt.Errorf("sample the pairs to re-judge: %w", err)
		}
		for _, s := range sample {
			gi := gold.Lookup(s.QueryID)
			refs = append(refs, ref{gi, slices.Index(ranked[gi], s.DocID), s.DocID, false})
		}
		plan.rejudged = int64(len(sample))
	}
	slices.SortFunc(refs, func(a, b ref) int { return cmp.Or(cmp.Compare(a.gi, b.gi), cmp.Compare(a.rank, b.rank)) })
	want := make([]string, 0, len(refs))
	for _, r := range refs {
		want = append(want, r.doc)
	}
	docs, err := corpus.Load(ctx, jd.Corpus, want, jd.CorpusOpts)
	if err != nil {
		return nil, err
	}
	plan.missingDocs = docs.Missing
	for _, r := range refs {
		d, ok := docs.Docs[r.doc]
		if !ok {
			plan.missingPairs++
			continue
		}
		p := judging.Pair{QueryID: gold.QueryID(r.gi), Query: gold.QueryText(r.gi), DocID: r.doc, Title: d.Title, Passage: d.Text,
			PassageSHA256: d.ContentHash()}
		if !r.hole {
			g, _ := gradeOf(gold, r.gi, r.doc)
			h := int(g)
			p.HumanGrade = &h
		}
		plan.pairs = append(plan.pairs, p)
	}
	return plan, nil
}

// gradeOf returns the gold grade of doc for query gi, if judged.
func gradeOf(gold *ingest.Gold, gi int32, doc string) (int32, bool) {
	for k, g := range gold.Grades(gi) {
		if gold.Doc(gi, k) == doc {
			return g, true
		}
	}
	return 0, false
}

// cutJudging publishes the plan's pairs as judge tasks, PairsPerTask at a
// time, after one probe request to the model.
func (r *run) cutJudging(pub *publisher, only map[string]bool) (map[string]int, error) {
	if err := checkQueryTexts(r.job, r.gold); err != nil {
		return nil, err
	}
	plan, err := planJudging(pub.ctx, r.job, r.gold)
	if err != nil {
		return nil, err
	}
	r.judgePlan = plan
	if len(plan.pairs) > 0 {
		if err := probeLLM(pub.ctx, r.job.Judge.LLM); err != nil {
			return nil, err
		}
	}
	headers := map[string]string{shard.HeaderKind: shard.KindJudge}
	per, S := r.job.Judge.pairsPerTask(), r.o.Shards
	tasks := map[string]int{}
	for n, lo := 0, 0; lo < len(plan.pairs); n, lo = n+1, lo+per {
		pairs := plan.pairs[lo:min(lo+per, len(plan.pairs))]
		id := TaskID(shard.ID(n%S), n/S, false)
		tasks[id] = len(pairs)
		if only != nil && !only[id] {
			continue
		}
		t := &judging.Task{LLMFile: r.job.Judge.LLM.File, LLM: string(r.job.Judge.LLM.Source), Pairs: pairs}
		if err := pub.send(id, len(pairs), headers, t.MarshalBinary); err != nil {
			return nil, err
		}
	}
	return tasks, nil
}

// probeLLM grades one small pair before any task: a wrong model, key or
// URL stops the job here (exit code 2, naming the key).
func probeLLM(ctx context.Context, cfg *llm.Config) error {
	c, err := llm.NewClient(cfg, llm.ClientOptions{})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Probe(ctx)
	return err
}

// judgeResults merges a judge job's results and keeps its token budget.
type judgeResults struct {
	totals judging.Totals
	budget int64
}

// merge adds a task's result; spent reports that the token budget is.
func (j *judgeResults) merge(data []byte) (spent bool, err error) {
	res, err := judging.DecodeResult(data)
	if err != nil {
		return false, err
	}
	j.totals.Merge(res)
	return j.budget > 0 && j.totals.Tokens() >= j.budget, nil
}

// outcome is the job's JudgeOutcome: judgments in order, re-judged ones
// with their human grades and the agreement they show.
func (j *judgeResults) outcome(plan *judgePlan, gold *ingest.Gold, job *Job, stopped bool) (*JudgeOutcome, error) {
	out := &JudgeOutcome{Judgments: []judgment.Judgment{}, Failed: []JudgeFailure{}, Stopped: stopped, Cached: j.totals.Cached,
		PromptTokens: j.totals.PromptTokens, CompletionTokens: j.totals.CompletionTokens}
	if plan != nil {
		out.Holes, out.Rejudged, out.MissingDocs, out.MissingPairs = plan.holes, plan.rejudged, plan.missingDocs, plan.missingPairs
	}
	var pairs []agreement.Pair
	for _, r := range j.totals.Sorted() {
		if r.Failed() {
			out.Failed = append(out.Failed, JudgeFailure{QueryID: r.QueryID, DocID: r.DocID, Error: r.Error})
			continue
		}
		jm := judgment.Judgment{QueryID: r.QueryID, DocID: r.DocID, Grade: r.Grade, Model: r.Model, PromptSHA256: r.PromptSHA256, Reason: r.Reason}
		if gi := gold.Lookup(r.QueryID); gi >= 0 {
			if g, ok := gradeOf(gold, gi, r.DocID); ok {
				h := int(g)
				jm.HumanGrade = &h
				pairs = append(pairs, agreement.Pair{Human: h, LLM: r.Grade})
			}
		}
		out.Judgments = append(out.Judgments, jm)
	}
	if len(pairs) > 0 {
		a, err := AgreementOf(pairs, job.Judge.LLM.MaxGrade, job.Ingest.RelLevel)
		if err != nil {
			return nil, err
		}
		out.Agreement = a
	}
	return out, nil
}

// AgreementOf summarises how far LLM grades agree with human ones: the
// confusion matrix over 0..maxGrade (widened to hold every grade seen),
// unweighted Cohen's κ on the scale and binarised at level. A κ that is
// not defined is nil, with the reason.
func AgreementOf(pairs []agreement.Pair, maxGrade int, level int32) (*summary.Agreement, error) {
	scale := agreement.Scale{Min: 0, Max: max(maxGrade, 1)}
	for _, p := range pairs {
		scale.Min, scale.Max = min(scale.Min, p.Human, p.LLM), max(scale.Max, p.Human, p.LLM)
	}
	m, err := agreement.NewMatrix(scale, pairs)
	if err != nil {
		return nil, err
	}
	a := &summary.Agreement{Pairs: m.N(), MinGrade: scale.Min, MaxGrade: scale.Max, Matrix: m.Counts, RelLevel: level}
	a.Observed, _ = m.Observed()
	var notes []string
	if k, err := m.Kappa(agreement.Unweighted); err == nil {
		a.Kappa = &k
	} else {
		notes = append(notes, "κ on the scale: "+err.Error())
	}
	if b, err := m.Binarize(int(level)); err == nil {
		if k, err := b.Kappa(agreement.Unweighted); err == nil {
			a.KappaBinary = &k
		} else {
			notes = append(notes, fmt.Sprintf("κ at grade ≥ %d: %v", level, err))
		}
	} else {
		notes = append(notes, fmt.Sprintf("κ at grade ≥ %d: %v", level, err))
	}
	a.Note = strings.Join(notes, "; ")
	return a, nil
}
