package summary

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/metric"
)

// SchemaVersion identifies the JSON layout.
const SchemaVersion = "evalgate.summary/v1"

// Summary is the result of one evaluation.
type Summary struct {
	Schema   string    `json:"schema"`
	Inputs   Inputs    `json:"inputs"`
	Config   Config    `json:"config"`
	Counts   Counts    `json:"counts"`
	Measures []Measure `json:"measures"`
	Groups   []Group   `json:"groups"`
	Warnings []string  `json:"warnings"`
	// RecallCurve is recall@k for k = 1..len(Run) (and the baseline's,
	// in a paired evaluation).
	RecallCurve *Curve `json:"recall_curve,omitempty"`
	// Baseline is the baseline run scored in the same job
	// (--baseline-run), and Comparison the paired statistics.
	Baseline   *Baseline   `json:"baseline,omitempty"`
	Comparison *Comparison `json:"comparison,omitempty"`
	// Gate is the release verdict, when ship criteria were given.
	Gate *Gate `json:"gate,omitempty"`
	// Execution describes how the job ran. It is the only part that may
	// differ between two evaluations of the same inputs.
	Execution Execution `json:"execution"`
}

// Curve holds recall@k for k = 1, 2, … .
type Curve struct {
	Run      []float64 `json:"run"`
	Baseline []float64 `json:"baseline,omitempty"`
}

// Baseline is a baseline run scored against the same gold set in the
// same job: its input, counts, values overall and per tag.
type Baseline struct {
	Input    Input     `json:"input"`
	Counts   Counts    `json:"counts"`
	Measures []Measure `json:"measures"`
	Groups   []Group   `json:"groups"`
	Warnings []string  `json:"warnings"`
}

// Comparison holds the paired statistics of a run against its baseline.
type Comparison struct {
	// Method names the statistics, for readers of the JSON.
	Method       string              `json:"method"`
	Confidence   float64             `json:"confidence"`
	Replicates   int                 `json:"replicates"`
	Permutations int                 `json:"permutations"`
	Seed         uint64              `json:"seed"`
	Measures     []MeasureComparison `json:"measures"`
	// Regressed lists the queries whose value of RegressedMeasure dropped
	// most, worst first.
	RegressedMeasure string           `json:"regressed_measure,omitempty"`
	Regressed        []RegressedQuery `json:"regressed_queries"`
	// Groups are the same comparisons over the tag groups that tag gates
	// check (only those: each costs a pass's worth of replicate sums).
	Groups []GroupComparison `json:"groups,omitempty"`
}

// GroupComparison is the paired comparison over one tag group.
type GroupComparison struct {
	Tag      string              `json:"tag"`
	Value    string              `json:"value"`
	Queries  int64               `json:"queries"`
	Measures []MeasureComparison `json:"measures"`
}

// MeasureComparison is one measure's run value, baseline value, the
// difference (run − baseline), its 95% interval and p-value.
type MeasureComparison struct {
	Name     string   `json:"name"`
	Value    float64  `json:"value"`
	Baseline float64  `json:"baseline"`
	Delta    float64  `json:"delta"`
	CILow    *float64 `json:"ci_low,omitempty"`
	CIHigh   *float64 `json:"ci_high,omitempty"`
	PValue   *float64 `json:"p_value,omitempty"`
}

// RegressedQuery is a query that got worse.
type RegressedQuery struct {
	QueryID  string  `json:"query_id"`
	Query    string  `json:"query,omitempty"`
	Value    float64 `json:"value"`
	Baseline float64 `json:"baseline"`
	// Rank and BaselineRank are the 1-based ranks of the first relevant
	// document (0: none retrieved).
	Rank         int `json:"first_relevant_rank"`
	BaselineRank int `json:"baseline_first_relevant_rank"`
}

// Gate is a release verdict (see package gate).
type Gate struct {
	Criteria string       `json:"criteria"`
	Verdict  string       `json:"verdict"` // pass, warn or fail
	ExitCode int          `json:"exit_code"`
	Headline string       `json:"headline"`
	Notes    []string     `json:"notes,omitempty"`
	Gates    []GateResult `json:"gates"`
}

// GateResult is the outcome of one gate.
type GateResult struct {
	Name          string   `json:"name"`
	Measure       string   `json:"measure"`
	Tag           string   `json:"tag,omitempty"`
	Severity      string   `json:"severity"`
	Status        string   `json:"status"` // pass, fail, warn, not-enough-queries
	Value         *float64 `json:"value,omitempty"`
	Queries       int64    `json:"queries"`
	Threshold     *float64 `json:"threshold,omitempty"`
	Baseline      *float64 `json:"baseline,omitempty"`
	Delta         *float64 `json:"delta,omitempty"`
	RegressionMax *float64 `json:"regression_max,omitempty"`
	CILow         *float64 `json:"ci_low,omitempty"`
	CIHigh        *float64 `json:"ci_high,omitempty"`
	PValue        *float64 `json:"p_value,omitempty"`
	Regression    string   `json:"regression"` // ok, regressed, not checked: …
	Reasons       []string `json:"reasons,omitempty"`
}

// Inputs identifies the files evaluated.
type Inputs struct {
	Gold Input `json:"gold"`
	Run  Input `json:"run"`
}

// Input is one input file.
type Input struct {
	Path   string `json:"path"`
	Format string `json:"format"`
	// Digest identifies the content independently of format, order and
	// comments: for the gold set its judgments and tags, for the run the
	// rankings that were scored.
	Digest string `json:"digest"`
}

// Config records every choice that affects the values.
type Config struct {
	Measures       []string `json:"measures"`
	RelLevel       int32    `json:"rel_level"`
	RankBy         string   `json:"rank_by"`
	Depth          int      `json:"depth"`
	Averaging      string   `json:"averaging"` // "gold-queries" or "run-queries"
	SkipNoRelevant bool     `json:"skip_no_relevant"`
	Strict         bool     `json:"strict"`
}

// Counts says what was and was not scored.
type Counts struct {
	GoldQueries       int64 `json:"gold_queries"`
	GoldJudgments     int64 `json:"gold_judgments"`
	RunQueries        int64 `json:"run_queries"`
	RunEntries        int64 `json:"run_entries"`
	ScoredQueries     int64 `json:"scored_queries"`
	RunOnlyQueries    int64 `json:"run_only_queries"`
	MissingFromRun    int64 `json:"missing_from_run"`
	MissingScored     int64 `json:"missing_scored_zero"`
	NoRelevant        int64 `json:"no_relevant_scored_zero"`
	NoRelevantSkipped int64 `json:"no_relevant_skipped"`
	DuplicateDocs     int64 `json:"duplicate_docs"`
	QueriesWithDupes  int64 `json:"queries_with_duplicates"`
	GoldDuplicates    int64 `json:"gold_duplicate_judgments"`
	DepthTruncated    int64 `json:"depth_truncated"`
}

// Measure is one measure's value over a set of queries.
type Measure struct {
	Name     string  `json:"name"`
	TRECName string  `json:"trec_name"`
	Value    float64 `json:"value"`
	// Kind is "mean" (the value is a mean over queries) or "sum".
	Kind string `json:"kind"`
}

// Group is the result for the queries of one tag value.
type Group struct {
	Tag      string    `json:"tag"`
	Value    string    `json:"value"`
	Queries  int64     `json:"queries"`
	Measures []Measure `json:"measures"`
}

// Execution describes how a job ran; it is excluded from comparisons.
type Execution struct {
	Mode           string  `json:"mode"` // "local" or "distributed"
	Workers        int     `json:"workers"`
	Shards         int     `json:"shards,omitempty"`
	Job            string  `json:"job,omitempty"`
	StartedAt      string  `json:"started_at"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
}

// CountsOf converts a join's statistics.
func CountsOf(stats ingest.Stats) Counts {
	return Counts{
		GoldQueries:       stats.GoldQueries,
		GoldJudgments:     stats.GoldJudgments,
		RunQueries:        stats.RunQueries,
		RunEntries:        stats.RunEntries,
		ScoredQueries:     stats.ScoredQueries,
		RunOnlyQueries:    stats.RunOnlyQueries,
		MissingFromRun:    stats.MissingFromRun,
		MissingScored:     stats.MissingScored,
		NoRelevant:        stats.NoRelevant,
		NoRelevantSkipped: stats.NoRelevantSkipped,
		DuplicateDocs:     stats.DuplicateDocs,
		QueriesWithDupes:  stats.QueriesWithDupes,
		GoldDuplicates:    stats.GoldDuplicates,
		DepthTruncated:    stats.DepthTruncated,
	}
}

// Build assembles a summary from reduced results and join statistics.
func Build(inputs Inputs, cfg Config, stats ingest.Stats, results []metric.GroupResult, exec Execution) *Summary {
	s := &Summary{
		Schema:    SchemaVersion,
		Inputs:    inputs,
		Config:    cfg,
		Counts:    CountsOf(stats),
		Groups:    []Group{},
		Warnings:  warnings(cfg, stats),
		Execution: exec,
	}
	for _, gr := range results {
		ms := measures(gr.Values)
		if gr.Name == metric.Overall {
			s.Measures = ms
			continue
		}
		tag, value, _ := strings.Cut(gr.Name, "=")
		s.Groups = append(s.Groups, Group{Tag: tag, Value: value, Queries: gr.Queries, Measures: ms})
	}
	return s
}

// Measures converts reduced values.
func Measures(vs []metric.Value) []Measure { return measures(vs) }

func measures(vs []metric.Value) []Measure {
	out := make([]Measure, len(vs))
	for i, v := range vs {
		kind := "mean"
		if v.Measure.Summed() {
			kind = "sum"
		}
		out[i] = Measure{Name: v.Measure.String(), TRECName: v.Measure.TRECName(), Value: v.Value, Kind: kind}
	}
	return out
}

// Warnings returns the warnings of a join's counts.
func Warnings(cfg Config, st ingest.Stats) []string { return warnings(cfg, st) }

func warnings(cfg Config, st ingest.Stats) []string {
	w := []string{}
	if n := st.NoRelevant; n > 0 {
		w = append(w, fmt.Sprintf("%s no relevant document (grade >= %d); %s scored and %s 0 on every relevance measure (use --skip-no-relevant to leave them out)",
			Count(n, "gold query has", "gold queries have"), cfg.RelLevel, Plural(n, "it is", "they are"), Plural(n, "scores", "score")))
	}
	if n := st.NoRelevantSkipped; n > 0 {
		w = append(w, fmt.Sprintf("%s without a relevant document (grade >= %d) %s left out (--skip-no-relevant)",
			Count(n, "gold query", "gold queries"), cfg.RelLevel, Plural(n, "was", "were")))
	}
	if n := st.MissingScored; n > 0 {
		w = append(w, fmt.Sprintf("%s missing from the run; %s 0 (use --only-run-queries to average over the queries in both files)",
			Count(n, "gold query is", "gold queries are"), Plural(n, "it scores", "they score")))
	}
	if left := st.MissingFromRun - st.MissingScored; left > 0 && cfg.Averaging == "run-queries" {
		w = append(w, fmt.Sprintf("%s missing from the run and left out (--only-run-queries)", Count(left, "gold query is", "gold queries are")))
	}
	if n := st.RunOnlyQueries; n > 0 {
		w = append(w, fmt.Sprintf("%s of the run %s not in the gold set (e.g. %q); %s not scored",
			Count(n, "query", "queries"), Plural(n, "is", "are"), st.RunOnlyExample, Plural(n, "it is", "they are")))
	}
	if st.DuplicateDocs > 0 {
		w = append(w, fmt.Sprintf("%s in %s of the run; the best-ranked occurrence was kept (trec_eval and --strict refuse such runs)",
			Count(st.DuplicateDocs, "duplicate doc id", "duplicate doc ids"), Count(st.QueriesWithDupes, "query", "queries")))
	}
	if n := st.GoldDuplicates; n > 0 {
		w = append(w, fmt.Sprintf("%s repeated identically in the gold set; each counts once", Count(n, "judgment is", "judgments are")))
	}
	return w
}

// Count is n and the noun in the number n asks for: "1 query", "12
// queries".
func Count[N int | int64](n N, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Plural is one or many, by n.
func Plural[N int | int64](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Value returns the overall value of the named measure (canonical name).
func (s *Summary) Value(name string) (float64, bool) {
	return lookup(s.Measures, name)
}

func lookup(ms []Measure, name string) (float64, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

// GroupValue returns the value of a measure over a tag group
// ("name=value") and the group's query count.
func (s *Summary) GroupValue(tag, name string) (float64, int64, bool) {
	return groupValue(s.Groups, tag, name)
}

// HasGroup reports whether some query of the summary has the tag
// ("name=value").
func (s *Summary) HasGroup(tag string) bool {
	k, v, _ := strings.Cut(tag, "=")
	for _, g := range s.Groups {
		if g.Tag == k && g.Value == v {
			return true
		}
	}
	return false
}

func groupValue(groups []Group, tag, name string) (float64, int64, bool) {
	k, v, _ := strings.Cut(tag, "=")
	for _, g := range groups {
		if g.Tag == k && g.Value == v {
			x, ok := lookup(g.Measures, name)
			return x, g.Queries, ok
		}
	}
	return 0, 0, false
}

// Value returns the baseline's overall value of a measure.
func (b *Baseline) Value(name string) (float64, bool) { return lookup(b.Measures, name) }

// GroupValue returns the baseline's value over a tag group.
func (b *Baseline) GroupValue(tag, name string) (float64, int64, bool) {
	return groupValue(b.Groups, tag, name)
}

// Comparison returns the paired comparison of a measure, or nil.
func (c *Comparison) Measure(name string) *MeasureComparison {
	if c == nil {
		return nil
	}
	for i := range c.Measures {
		if c.Measures[i].Name == name {
			return &c.Measures[i]
		}
	}
	return nil
}

// GroupMeasure returns the paired comparison of a measure over a tag group
// ("name=value"), or nil.
func (c *Comparison) GroupMeasure(tag, name string) *MeasureComparison {
	if c == nil {
		return nil
	}
	k, v, _ := strings.Cut(tag, "=")
	for i := range c.Groups {
		if g := &c.Groups[i]; g.Tag == k && g.Value == v {
			for j := range g.Measures {
				if g.Measures[j].Name == name {
					return &g.Measures[j]
				}
			}
		}
	}
	return nil
}

// WriteJSON writes the summary as indented JSON.
func (s *Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// ReadJSON reads a summary written by WriteJSON, checking its schema.
func ReadJSON(r io.Reader) (*Summary, error) {
	var s Summary
	dec := json.NewDecoder(r)
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("read summary: %w", err)
	}
	if s.Schema != SchemaVersion {
		return nil, fmt.Errorf("read summary: schema %q, want %q", s.Schema, SchemaVersion)
	}
	return &s, nil
}

// Comparable returns a copy of the summary without its Execution (and
// gate verdict), the form in which two evaluations of the same inputs
// must be byte-identical.
func (s *Summary) Comparable() *Summary {
	c := *s
	c.Execution = Execution{}
	c.Gate = nil
	return &c
}
