package summary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/schema"
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
	// Retrieval describes the live retrieval, when the run came from a
	// retriever asked during the job (--retriever).
	Retrieval *Retrieval `json:"retrieval,omitempty"`
	// Judgments describes the LLM judgments filled into the gold set
	// (--judgments), and Filled is the evaluation with them: the same
	// inputs and options, every measure (and the baseline's, and the
	// comparison) with the LLM judgments added where no human judged.
	Judgments *Judgments `json:"judgments,omitempty"`
	Filled    *Summary   `json:"filled,omitempty"`
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
	// Retrieval describes the live retrieval the baseline's rankings came
	// from, when it was a retriever asked for them (the reference of
	// `compare` given with --retriever).
	Retrieval *Retrieval `json:"retrieval,omitempty"`
}

// Comparison holds the paired statistics of a run against its baseline.
type Comparison struct {
	// Method names the statistics, for readers of the JSON.
	Method       string  `json:"method"`
	Confidence   float64 `json:"confidence"`
	Replicates   int     `json:"replicates"`
	Permutations int     `json:"permutations"`
	Seed         uint64  `json:"seed"`
	// HolmComparisons is the number of comparisons against one reference
	// whose p-values were adjusted together (`compare` with more than two
	// systems: see MeasureComparison.PValueHolm); 0 when not adjusted.
	HolmComparisons int                 `json:"holm_comparisons,omitempty"`
	Measures        []MeasureComparison `json:"measures"`
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
	// PValueHolm is PValue adjusted by Holm's step-down procedure over
	// the Comparison.HolmComparisons comparisons of the same measure
	// against the same reference (metric.Holm); nil when not adjusted.
	PValueHolm *float64 `json:"p_value_holm,omitempty"`
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
	Status        string   `json:"status"` // pass, fail, warn, not-enough-queries, not_checked
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
	// Unit is what Value, Threshold, Baseline, Delta and RegressionMax
	// count: empty for a quality measure (a fraction), "ms" or "queries"
	// for a cost of a live retrieval (then Threshold is a ceiling and
	// RegressionMax the largest allowed rise).
	Unit string `json:"unit,omitempty"`
	// Judgments is "filled" for a gate on the values with the LLM
	// judgments filled in (Summary.Filled); empty for the gold set as
	// given.
	Judgments string   `json:"judgments,omitempty"`
	Reasons   []string `json:"reasons,omitempty"`
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
	// JudgedOnly: unjudged documents were dropped from the rankings before
	// scoring (--judged-only, trec_eval -J). Absent in summaries written
	// before the option existed, which read as false, as they were scored.
	JudgedOnly bool `json:"judged_only"`
}

// ConfigDifference is an option that changes values, set differently in
// two summaries' configurations.
type ConfigDifference struct {
	Option   string // the config field and its flag: "rel_level (--rel-level)"
	Baseline string // its value in the baseline's configuration
	Now      string // its value in this one
}

func (d ConfigDifference) String() string {
	return fmt.Sprintf("%s %s in the baseline, %s now", d.Option, d.Baseline, d.Now)
}

// valueOptions are the options of Config that change values, in the
// order differences are reported. Measure parameters (cutoffs, nDCG's
// gain) are part of the measure names: a measure scored with other
// parameters is another measure. An option added to Config that changes
// values is one more line here.
var valueOptions = []struct {
	name  string
	value func(Config) string
}{
	{"rel_level (--rel-level)", func(c Config) string { return strconv.Itoa(int(c.RelLevel)) }},
	{"rank_by (--rank-by)", func(c Config) string { return c.RankBy }},
	{"depth (--depth)", func(c Config) string { return strconv.Itoa(c.Depth) }},
	{"averaging (--only-run-queries)", func(c Config) string { return c.Averaging }},
	{"skip_no_relevant (--skip-no-relevant)", func(c Config) string { return strconv.FormatBool(c.SkipNoRelevant) }},
	{"strict (--strict)", func(c Config) string { return strconv.FormatBool(c.Strict) }},
	{"judged_only (--judged-only)", func(c Config) string { return strconv.FormatBool(c.JudgedOnly) }},
}

// Differences lists the options that change values and are set
// differently in baseline than in c.
func (c Config) Differences(baseline Config) []ConfigDifference {
	var out []ConfigDifference
	for _, o := range valueOptions {
		if b, now := o.value(baseline), o.value(c); b != now {
			out = append(out, ConfigDifference{Option: o.name, Baseline: b, Now: now})
		}
	}
	return out
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
	// UnjudgedDropped counts the ranked documents (after the depth cut)
	// dropped as unjudged by --judged-only; 0 without it.
	UnjudgedDropped int64 `json:"unjudged_dropped"`
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
		UnjudgedDropped:   stats.UnjudgedDropped,
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
	w := relevanceWarnings(cfg, st)
	if n := st.MissingScored; n > 0 {
		w = append(w, fmt.Sprintf("%s missing from the run; %s 0 (use --only-run-queries to average over the queries in both files)",
			Count(n, "gold query is", "gold queries are"), Plural(n, "it scores", "they score")))
	}
	if left := st.MissingFromRun - st.MissingScored; left > 0 && cfg.Averaging == "run-queries" {
		w = append(w, fmt.Sprintf("%s missing from the run and left out (--only-run-queries)", Count(left, "gold query is", "gold queries are")))
	}
	return append(w, fileWarnings(st)...)
}

// BaselineWarnings returns the warnings of a baseline run scored in the
// same job, from its counts as the summary records them (BaselineCounts):
// it is scored on the run's queries, so they say which those are and how
// many of them the baseline has no ranking for, then what its file holds.
func BaselineWarnings(cfg Config, st ingest.Stats) []string {
	w := []string{}
	if st.ScoredQueries != st.GoldQueries {
		w = append(w, fmt.Sprintf("the baseline is scored on the run's %s, not on all %d gold queries, so that each query is compared with itself",
			Count(st.ScoredQueries, "scored query", "scored queries"), st.GoldQueries))
	}
	w = append(w, relevanceWarnings(cfg, st)...)
	if n := st.MissingScored; n > 0 {
		w = append(w, fmt.Sprintf("%s of the %s %s no ranking in the baseline run; the baseline scores 0 on %s",
			Count(n, "query", "queries"), Count(st.ScoredQueries, "scored query", "scored queries"), Plural(n, "has", "have"), Plural(n, "it", "them")))
	}
	return append(w, fileWarnings(st)...)
}

// BaselineCounts are the counts of a baseline run scored in the same job
// as run: what its file holds (base: its queries, entries, duplicates,
// depth, gold queries it lacks), and what its values were computed on —
// the run's scored queries, of which those without a baseline ranking
// score 0.
func BaselineCounts(base, run ingest.Stats) ingest.Stats {
	b := base
	b.ScoredQueries = run.ScoredQueries
	b.MissingScored = run.BaselineMissing
	b.NoRelevant, b.NoRelevantSkipped = run.NoRelevant, run.NoRelevantSkipped
	b.BaselineMissing = 0
	return b
}

// relevanceWarnings are the warnings on scored queries without a
// relevant document.
func relevanceWarnings(cfg Config, st ingest.Stats) []string {
	w := []string{}
	if n := st.NoRelevant; n > 0 {
		w = append(w, fmt.Sprintf("%s no relevant document (grade >= %d); %s scored and %s 0 on every relevance measure (use --skip-no-relevant to leave them out)",
			Count(n, "gold query has", "gold queries have"), cfg.RelLevel, Plural(n, "it is", "they are"), Plural(n, "scores", "score")))
	}
	if n := st.NoRelevantSkipped; n > 0 {
		w = append(w, fmt.Sprintf("%s without a relevant document (grade >= %d) %s left out (--skip-no-relevant)",
			Count(n, "gold query", "gold queries"), cfg.RelLevel, Plural(n, "was", "were")))
	}
	return w
}

// fileWarnings are the warnings on what a run's file holds that is not
// scored as written.
func fileWarnings(st ingest.Stats) []string {
	var w []string
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

// ScoredOn says what the baseline's values were computed on, for reports:
// "scored on the same 998 queries (2 of them have no ranking in it and
// score 0)".
func (b *Baseline) ScoredOn() string {
	c := b.Counts
	out := "scored on the same " + Count(c.ScoredQueries, "query", "queries")
	if n := c.MissingScored; n > 0 {
		out += fmt.Sprintf(" (%d of them %s no ranking in it and %s 0)", n, Plural(n, "has", "have"), Plural(n, "scores", "score"))
	}
	return out
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
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read summary: %w", err)
	}
	s, perr := parse(data)
	if perr != nil {
		return nil, fmt.Errorf("read summary: %w", perr.Err)
	}
	return s, nil
}

// ReadFile reads the summary in a file. A file that is not a summary is
// a *schema.InputError naming the file, the line and column and, for
// JSON that ends early or does not parse, the byte offset.
func ReadFile(path string) (*Summary, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read summary %s: %w", path, err)
	}
	return Parse(path, data)
}

// Parse reads a summary from data; name names it in errors, which are
// *schema.InputError as for ReadFile.
func Parse(name string, data []byte) (*Summary, error) {
	s, err := parse(data)
	if err != nil {
		err.File = name
		return nil, err
	}
	return s, nil
}

func parse(data []byte) (*Summary, *schema.InputError) {
	at := func(off int64, err error) *schema.InputError {
		off = min(max(off, 0), int64(len(data)))
		line := int64(bytes.Count(data[:off], []byte{'\n'})) + 1
		col := int(off) - (bytes.LastIndexByte(data[:off], '\n') + 1) + 1
		return &schema.InputError{Line: line, Column: col, Err: err}
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &schema.InputError{Err: fmt.Errorf("%w: empty file: want a summary JSON (%s)", schema.ErrNoData, SchemaVersion)}
	}
	var s Summary
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch err := json.Unmarshal(data, &s); {
	case errors.As(err, &syn) && syn.Error() == "unexpected end of JSON input":
		return nil, at(syn.Offset, fmt.Errorf("%w: the JSON ends early, at byte %d of %d, inside a value (a truncated file?)",
			schema.ErrCorrupt, syn.Offset, len(data)))
	case errors.As(err, &syn):
		return nil, at(syn.Offset-1, fmt.Errorf("%w: invalid JSON at byte %d: %v", schema.ErrCorrupt, syn.Offset, err))
	case errors.As(err, &typ):
		return nil, at(typ.Offset, fmt.Errorf("%w: field %q at byte %d: want %v, got JSON %s", schema.ErrTypeMismatch, typ.Field, typ.Offset, typ.Type, typ.Value))
	case err != nil:
		return nil, &schema.InputError{Err: fmt.Errorf("%w: %v", schema.ErrCorrupt, err)}
	}
	if s.Schema != SchemaVersion {
		return nil, &schema.InputError{Line: 1, Field: "schema", Err: fmt.Errorf("%w: schema %q, want %q: not an evalgate summary, or one of another version",
			schema.ErrTypeMismatch, s.Schema, SchemaVersion)}
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
