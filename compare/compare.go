package compare

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/evalgate/evalgate/agreement"
	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/retrieval"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/summary"
)

// CurveDepth is the depth of the recall curves of the comparisons.
const CurveDepth = 100

// System is one system of an A/B test: a run file, or a retriever asked
// for every gold query.
type System struct {
	// Name labels the system in logs (and the caller's columns).
	Name string
	// Run is the run file; it stays empty for a retriever.
	Run coordinator.Input
	// Retriever, if set, is asked for the rankings instead (its Failures
	// budget applies to it alone).
	Retriever *coordinator.Retriever
}

// Test is an A/B test of Systems on one gold set.
type Test struct {
	// Systems are compared with the first, the reference: at least two.
	Systems []System
	// Job holds what every evaluation of the test shares: the gold set,
	// the measures, the ingest and read options, the logger, and LLM
	// judgments to fill in (Fill: every comparison is also made with them,
	// and Orderings compares the systems' order both ways). Its Run,
	// Baseline, Retriever, SaveRun and PerQuery are not used, and its
	// metric configuration has no pairing (Run adds it).
	Job coordinator.Job
	// Pairing sets the paired statistics: replicates, permutations, seed,
	// most regressed queries. Its Measures are left empty: every mean
	// measure of Job is compared.
	Pairing metric.Pairing
}

// Run runs the test: it probes every retriever, asks each for the
// rankings of every gold query (in the order of Systems), then scores
// each system after the first against the first, and adjusts the
// p-values (AdjustHolm). The i-th summary is Systems[i+1] against
// Systems[0] (its Baseline): with the reference's live retrieval in
// Baseline.Retrieval and the system's in Retrieval, when they are
// retrievers.
func Run(ctx context.Context, t Test) ([]*summary.Summary, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	for _, s := range t.Systems {
		if s.Retriever != nil {
			if err := coordinator.Probe(ctx, t.liveJob(s)); err != nil {
				return nil, err
			}
		}
	}
	dir, err := os.MkdirTemp("", "evalgate-compare-")
	if err != nil {
		return nil, fmt.Errorf("create a directory for the retrieved runs: %w", err)
	}
	defer os.RemoveAll(dir)
	inputs := make([]coordinator.Input, len(t.Systems))
	live := make([]*summary.Summary, len(t.Systems))
	for i, s := range t.Systems {
		if s.Retriever == nil {
			inputs[i] = s.Run
			continue
		}
		inputs[i] = coordinator.Input{Path: filepath.Join(dir, strconv.Itoa(i)+".jsonl"), Format: schema.FormatJSONL}
		if live[i], err = t.retrieve(ctx, s, inputs[i].Path); err != nil {
			return nil, err
		}
	}
	out := make([]*summary.Summary, 0, len(t.Systems)-1)
	for i := 1; i < len(t.Systems); i++ {
		t.Job.Logger.Info().Str("system", t.Systems[i].Name).Str("reference", t.Systems[0].Name).Msg("comparing")
		s, err := t.pair(ctx, inputs[i], inputs[0])
		if err != nil {
			return nil, err
		}
		if l := live[i]; l != nil {
			s.Inputs.Run, s.Retrieval = l.Inputs.Run, l.Retrieval
		}
		if l := live[0]; l != nil {
			s.Baseline.Input, s.Baseline.Retrieval = l.Inputs.Run, l.Retrieval
		}
		out = append(out, s)
	}
	AdjustHolm(out)
	if t.Job.Fill != nil {
		orderings := Orderings(out)
		for _, s := range out {
			s.Judgments.Orderings = orderings
		}
	}
	return out, nil
}

// Orderings compares, for every mean measure, the order of the systems
// (the reference, then each compared system) by their values with human
// judgments and with LLM judgments filled in: Kendall's τ-b between the
// two. comparisons are Run's summaries, each with its Filled evaluation.
func Orderings(comparisons []*summary.Summary) []summary.Ordering {
	if len(comparisons) == 0 || comparisons[0].Filled == nil || comparisons[0].Filled.Baseline == nil {
		return nil
	}
	var out []summary.Ordering
	for i, m := range comparisons[0].Baseline.Measures {
		if m.Kind != "mean" {
			continue
		}
		human := []float64{m.Value}
		filled := []float64{comparisons[0].Filled.Baseline.Measures[i].Value}
		for _, s := range comparisons {
			human = append(human, s.Measures[i].Value)
			filled = append(filled, s.Filled.Measures[i].Value)
		}
		o := summary.Ordering{Measure: m.Name, Systems: len(human)}
		if tau, err := agreement.KendallTauB(human, filled); err == nil {
			o.Tau = &tau
		} else {
			o.Note = err.Error()
		}
		out = append(out, o)
	}
	return out
}

func (t *Test) validate() error {
	if len(t.Systems) < 2 {
		return fmt.Errorf("compare: %d systems: want at least two", len(t.Systems))
	}
	for i, s := range t.Systems {
		if (s.Run.Path == "") == (s.Retriever == nil) {
			return fmt.Errorf("compare: system %d (%s): want a run file or a retriever", i+1, s.Name)
		}
	}
	if t.Job.Retriever != nil || t.Job.Baseline.Path != "" || t.Job.Metric.Pairing != nil || t.Job.Metric.Paired {
		return errors.New("compare: the shared job holds a retriever, a baseline or a pairing")
	}
	return nil
}

// liveJob is the job asking s's retriever for every gold query.
func (t *Test) liveJob(s System) coordinator.Job {
	job := t.Job
	job.Run, job.Retriever, job.SaveRun, job.PerQuery, job.Fill = coordinator.Input{}, s.Retriever, nil, nil, nil
	return job
}

// retrieve asks s's retriever for every gold query and writes the
// rankings to path; it returns the live job's summary.
func (t *Test) retrieve(ctx context.Context, s System, path string) (*summary.Summary, error) {
	t.Job.Logger.Info().Str("system", s.Name).Str("retriever", s.Retriever.Config.File).Msg("asking the retriever")
	job := t.liveJob(s)
	job.SaveRun = func(_ string, recs []*retrieval.Record) error { return writeRankings(path, recs) }
	out, err := coordinator.Score(ctx, job)
	if err != nil {
		return nil, err
	}
	return out.Summary, nil
}

// writeRankings writes the answered records as a JSONL run without
// scores: the list order is the ranking. Failed queries have no line
// (missing from the run, as they are from the live job).
func writeRankings(path string, recs []*retrieval.Record) error {
	bare := make([]*retrieval.Record, len(recs))
	for i, r := range recs {
		c := *r
		c.Scores = nil
		bare[i] = &c
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write the retrieved run: %w", err)
	}
	if err := retrieval.WriteRun(f, schema.FormatJSONL, "", bare); err != nil {
		f.Close()
		return fmt.Errorf("write the retrieved run: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write the retrieved run: %w", err)
	}
	return nil
}

// pair scores run against the reference, paired, on every mean measure.
func (t *Test) pair(ctx context.Context, run, reference coordinator.Input) (*summary.Summary, error) {
	job := t.Job
	job.Run, job.Baseline, job.Retriever, job.SaveRun, job.PerQuery = run, reference, nil, nil, nil
	p := t.Pairing
	p.Measures = nil
	for i, m := range job.Metric.Measures {
		if !m.Summed() {
			p.Measures = append(p.Measures, i)
		}
	}
	job.Metric.Paired, job.Metric.CurveDepth, job.Metric.Pairing = true, CurveDepth, &p
	out, err := coordinator.Score(ctx, job)
	if err != nil {
		return nil, err
	}
	return out.Summary, nil
}
