package gate

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/summary"
)

// Statuses of a gate.
const (
	StatusPass           = "pass"
	StatusFail           = "fail"
	StatusWarn           = "warn"
	StatusNotEnoughQuery = "not-enough-queries"
	// StatusNotChecked is a gate whose only check could not be made: it
	// has a regression limit and no floor, and there is no baseline value
	// to compare with. It neither passes nor fails.
	StatusNotChecked      = "not_checked"
	RegressionOK          = "ok"
	RegressionRegressed   = "regressed"
	RegressionWithinNoise = "not significant"
	RegressionNoBaseline  = "not checked: no baseline"
)

// Verdicts and their exit codes.
const (
	VerdictPass = "pass"
	VerdictWarn = "warn"
	VerdictFail = "fail"
)

// ErrNoBaseline is returned when a baseline is required and absent. Its
// text holds for every command: evalgate gate has --baseline, and gates a
// summary scored with --baseline-run (by score or run).
var ErrNoBaseline = errors.New("gate: no baseline: give --baseline SUMMARY, or score with --baseline-run RUN")

// ErrBaselineIncomplete is returned when a baseline is required and the
// one given lacks a value a regression limit needs.
var ErrBaselineIncomplete = errors.New("gate: the baseline lacks a gated value")

// ErrGoldChanged is returned when the baseline was scored on another gold
// set.
var ErrGoldChanged = errors.New("gate: the baseline was scored on a different gold set")

// ErrConfigChanged is returned when the baseline was scored with other
// options that change values (summary.Config.Differences).
var ErrConfigChanged = errors.New("gate: the baseline was scored with other options")

// Options controls Evaluate.
type Options struct {
	// Baseline is a previous summary to compare with, when the summary has
	// no baseline run of its own; BaselineFile names its file in errors.
	Baseline     *summary.Summary
	BaselineFile string
	// RequireBaseline makes a missing baseline an error instead of a
	// "not checked" note.
	RequireBaseline bool
	// AllowGoldChange accepts a baseline scored on a different gold set
	// (the verdict notes it).
	AllowGoldChange bool
	// AllowConfigChange accepts a baseline scored with other options that
	// change values (the verdict notes them).
	AllowConfigChange bool
}

// baselineSource provides baseline values and, for a baseline run scored
// in the same job, the paired statistics.
type baselineSource struct {
	overall func(name string) (float64, bool)
	group   func(tag, name string) (float64, int64, bool)
	cmp     *summary.Comparison
	what    string
	curve   []float64 // the baseline's recall@k, k = 1…, if known
	// retrieval is the baseline's live retrieval (its latencies), when it
	// was one: a saved summary of a --retriever job.
	retrieval *summary.Retrieval
}

// reportBaseline is the baseline a summary is compared with: the baseline
// run scored in the same job, else the saved summary given (--baseline);
// nil for none.
func reportBaseline(s, saved *summary.Summary) *baselineSource {
	switch {
	case s.Baseline != nil:
		b := s.Baseline
		src := &baselineSource{overall: b.Value, group: b.GroupValue, cmp: s.Comparison, what: "the baseline run " + b.Input.Path}
		if s.RecallCurve != nil {
			src.curve = s.RecallCurve.Baseline
		}
		return src
	case saved != nil:
		src := &baselineSource{overall: saved.Value, group: saved.GroupValue, what: "the saved summary of " + saved.Inputs.Run.Path,
			retrieval: saved.Retrieval}
		if saved.RecallCurve != nil {
			src.curve = saved.RecallCurve.Run
		}
		return src
	}
	return nil
}

func pickBaseline(s *summary.Summary, o Options, notes *[]string) (*baselineSource, error) {
	switch {
	case s.Baseline != nil && o.Baseline != nil:
		return nil, errors.New("gate: two baselines: the baseline run scored in this job and a saved summary; give one")
	case s.Baseline != nil:
		return reportBaseline(s, nil), nil
	case o.Baseline != nil:
		b := o.Baseline
		if b.Inputs.Gold.Digest != s.Inputs.Gold.Digest {
			if !o.AllowGoldChange {
				return nil, inBaseline(o.BaselineFile, fmt.Errorf("%w (%s, now %s); compare on the same gold set or pass --allow-gold-change",
					ErrGoldChanged, b.Inputs.Gold.Digest, s.Inputs.Gold.Digest))
			}
			*notes = append(*notes, "The baseline was scored on a different gold set (--allow-gold-change): changes mix model and gold-set differences.")
		}
		note, err := CheckBaselineConfig(s.Config, o)
		if err != nil {
			return nil, err
		}
		if note != "" {
			*notes = append(*notes, note)
		}
		return reportBaseline(s, b), nil
	}
	return nil, nil
}

// CheckBaselineConfig compares the options that change values of a
// summary scored with now (summary.Config.Differences) with those of the
// saved baseline o.Baseline. A difference is an error wrapping
// ErrConfigChanged that names the baseline's file and each option with
// both values, or with AllowConfigChange a note for the verdict. Callers
// can check before scoring; Evaluate checks again.
func CheckBaselineConfig(now summary.Config, o Options) (note string, err error) {
	if o.Baseline == nil {
		return "", nil
	}
	diffs := now.Differences(o.Baseline.Config)
	if len(diffs) == 0 {
		return "", nil
	}
	var list []string
	for _, d := range diffs {
		list = append(list, d.String())
	}
	if !o.AllowConfigChange {
		return "", inBaseline(o.BaselineFile, fmt.Errorf("%w: %s; score both with the same options or pass --allow-config-change",
			ErrConfigChanged, strings.Join(list, "; ")))
	}
	return "The baseline was scored with other options (--allow-config-change): " + strings.Join(list, "; ") +
		". Changes mix model and scoring differences.", nil
}

// inBaseline names the baseline's file in err, when known.
func inBaseline(file string, err error) error {
	if file == "" {
		return err
	}
	return &schema.InputError{File: file, Err: err}
}

// Evaluate gates a summary. The verdict is fail if an error gate fails,
// warn if only warning gates fail, pass otherwise; ExitCode is 1 for fail
// and 0 otherwise. A gate whose regression limit could not be checked (no
// baseline, or a baseline without the gate's measure or tag) says so in
// its reasons, whatever its status; with RequireBaseline it is an error
// (ErrNoBaseline, or ErrBaselineIncomplete when the baseline lacks it).
//
// Every error Evaluate returns is a problem with the criteria, the
// summaries or the options given, never with the machine: callers report
// it as bad input.
func Evaluate(c *Criteria, s *summary.Summary, o Options) (*summary.Gate, error) {
	out := &summary.Gate{Criteria: c.File, Gates: []summary.GateResult{}}
	base, err := pickBaseline(s, o, &out.Notes)
	if err != nil {
		return nil, err
	}
	if base == nil && o.RequireBaseline {
		return nil, ErrNoBaseline
	}
	unchecked := false
	var filledBase *baselineSource
	filledBaseKnown := false
	for _, g := range c.Gates {
		sv, bv := s, base
		if g.Cost == "" && g.Judgments == JudgmentsFilled {
			if s.Filled == nil {
				out.Gates = append(out.Gates, notFilled(g))
				continue
			}
			if !filledBaseKnown {
				filledBase, filledBaseKnown = filledBaseline(s, o), true
			}
			sv, bv = s.Filled, filledBase
		}
		r, err := evaluateGate(c.File, g, sv, bv)
		if err != nil {
			return nil, err
		}
		if sv != s {
			r.Judgments = JudgmentsFilled
		}
		if o.RequireBaseline && regressionUnchecked(g, r) {
			// base is not nil here: without one Evaluate returned
			// ErrNoBaseline above.
			return nil, fmt.Errorf("%w: gate %q: %s, so its regression limit cannot be checked (--require-baseline)",
				ErrBaselineIncomplete, g.Name, strings.TrimPrefix(r.Regression, "not checked: "))
		}
		unchecked = unchecked || regressionUnchecked(g, r)
		out.Gates = append(out.Gates, r)
	}
	if base == nil && unchecked {
		// Only about limits that exist: a floor needs no baseline.
		out.Notes = append(out.Notes, "No baseline: regression limits were not checked.")
	}
	out.Verdict, out.ExitCode = VerdictPass, 0
	for _, r := range out.Gates {
		switch r.Status {
		case StatusFail:
			out.Verdict, out.ExitCode = VerdictFail, 1
		case StatusWarn:
			if out.Verdict == VerdictPass {
				out.Verdict = VerdictWarn
			}
		}
	}
	out.Headline = headline(out)
	return out, nil
}

func ptr(x float64) *float64 { return &x }

// notFilled is the result of a gate on filled-in values of a summary
// scored without LLM judgments: not checked.
func notFilled(g Gate) summary.GateResult {
	return summary.GateResult{Name: g.Name, Measure: g.Measure.String(), Tag: g.Tag, Severity: string(g.Severity),
		Threshold: g.Threshold, RegressionMax: g.RegressionMax, Judgments: JudgmentsFilled,
		Status: StatusNotChecked, Regression: "not checked: no LLM judgments filled in",
		Reasons: []string{"not checked: the gate asks for values with LLM judgments filled in (judgments: filled), and the summary has none (score with --judgments)"}}
}

// filledBaseline is the baseline of the values with LLM judgments filled
// in: the baseline run scored with them in the same job, or a saved
// summary's filled-in values; a saved summary scored without judgments
// lacks them (regression limits are then not checked).
func filledBaseline(s *summary.Summary, o Options) *baselineSource {
	switch {
	case s.Filled.Baseline != nil:
		return reportBaseline(s.Filled, nil)
	case o.Baseline != nil && o.Baseline.Filled != nil:
		return reportBaseline(s.Filled, o.Baseline.Filled)
	case o.Baseline != nil:
		return &baselineSource{
			overall: func(string) (float64, bool) { return 0, false },
			group:   func(string, string) (float64, int64, bool) { return 0, 0, false },
			what:    "the saved summary of " + o.Baseline.Inputs.Run.Path + ", scored without LLM judgments,",
		}
	}
	return nil
}

// evaluateGate gates s on g; file names the criteria file in errors.
func evaluateGate(file string, g Gate, s *summary.Summary, base *baselineSource) (summary.GateResult, error) {
	if g.Cost != "" {
		return evaluateCost(file, g, s, base)
	}
	name := g.Measure.String()
	r := summary.GateResult{Name: g.Name, Measure: name, Tag: g.Tag, Severity: string(g.Severity),
		Threshold: g.Threshold, RegressionMax: g.RegressionMax}
	var value float64
	var ok bool
	if g.Tag == "" {
		value, ok = s.Value(name)
		r.Queries = s.Counts.ScoredQueries
	} else {
		value, r.Queries, ok = s.GroupValue(g.Tag, name)
		if !ok {
			if err := checkTag(file, g, s); err != nil {
				return r, err
			}
		}
	}
	if !ok {
		return r, fmt.Errorf("gate %q: the summary has no %s (score it with -m %s)", g.Name, name, name)
	}
	if g.Tag != "" && r.Queries < int64(g.MinQueries) {
		r.Status = StatusNotEnoughQuery
		r.Regression = "not checked: not enough queries"
		r.Reasons = []string{fmt.Sprintf("not enough queries: %d with %s, at least %d needed for a verdict", r.Queries, g.Tag, g.MinQueries)}
		return r, nil
	}
	r.Value = ptr(value)
	var failures []string
	if g.Threshold != nil && value < *g.Threshold {
		failures = append(failures, fmt.Sprintf("%s is %s, below the floor of %s", label(g), pct(value), pct(*g.Threshold)))
	}
	switch {
	case base == nil:
		r.Regression = RegressionNoBaseline
	default:
		var bv float64
		var found bool
		if g.Tag == "" {
			bv, found = base.overall(name)
		} else {
			bv, _, found = base.group(g.Tag, name)
		}
		if !found {
			r.Regression = fmt.Sprintf("not checked: %s has no %s", base.what, name+tagSuffix(g.Tag))
			break
		}
		r.Baseline, r.Delta = ptr(bv), ptr(value-bv)
		var pvalue *float64
		mc := base.cmp.Measure(name)
		if g.Tag != "" {
			mc = base.cmp.GroupMeasure(g.Tag, name)
		}
		if mc != nil {
			r.CILow, r.CIHigh, r.PValue = mc.CILow, mc.CIHigh, mc.PValue
			pvalue = mc.PValue
		}
		r.Regression = RegressionOK
		if g.RegressionMax != nil && value-bv < -*g.RegressionMax-1e-12 {
			msg := fmt.Sprintf("%s dropped from %s to %s (%s, more than the %s allowed)", label(g), pct(bv), pct(value),
				points(value-bv), pointsAbs(*g.RegressionMax))
			switch {
			case g.Significant && pvalue != nil && *pvalue >= g.Alpha:
				r.Regression = RegressionWithinNoise
				r.Reasons = append(r.Reasons, fmt.Sprintf("%s dropped %s, but the drop is not significant (%s ≥ %v)",
					label(g), pointsAbs(bv-value), pText(*pvalue), g.Alpha))
			case g.Significant && pvalue == nil:
				r.Regression = RegressionRegressed
				failures = append(failures, msg+"; significance not checked: "+noPValue(base, name+tagSuffix(g.Tag)))
			default:
				r.Regression = RegressionRegressed
				switch {
				case g.Significant:
					msg += fmt.Sprintf("; the drop is significant (%s < %v)", pText(*pvalue), g.Alpha)
				case pvalue != nil:
					msg += "; " + pText(*pvalue)
				}
				failures = append(failures, msg)
			}
		}
	}
	settle(g, &r, failures)
	return r, nil
}

// settle sets a gate's status from its failures, and puts the failures
// first among its reasons.
func settle(g Gate, r *summary.GateResult, failures []string) {
	r.Reasons = append(failures, r.Reasons...)
	if regressionUnchecked(g, *r) {
		r.Reasons = append(r.Reasons, "regression "+r.Regression)
	}
	switch {
	case len(failures) > 0 && g.Severity == SeverityError:
		r.Status = StatusFail
	case len(failures) > 0:
		r.Status = StatusWarn
	case g.Threshold == nil && regressionUnchecked(g, *r):
		// Nothing was checked: "pass" would claim more than it knows.
		r.Status = StatusNotChecked
	default:
		r.Status = StatusPass
	}
}

// checkTag refuses a gate on a tag group no query has: almost always a
// typo, and passing it would switch the gate off. It is an error in the
// criteria, so it names their file and line.
func checkTag(file string, g Gate, s *summary.Summary) error {
	if g.Tag == "" || s.HasGroup(g.Tag) {
		return nil
	}
	err := fmt.Errorf("gate %q: no query has the tag %s%s", g.Name, g.Tag, knownTagValues(s, g.Tag))
	if file == "" {
		return err
	}
	return &schema.InputError{File: file, Line: int64(max(g.TagLine, g.Line, 1)), Field: "tag", Err: err}
}

// evaluateCost gates s on a cost of its live retrieval (a latency
// percentile, failed queries): the threshold is a ceiling, the regression
// limit the largest rise over the baseline's live retrieval. A summary of
// a run file has no such cost: the gate is not checked.
func evaluateCost(file string, g Gate, s *summary.Summary, base *baselineSource) (summary.GateResult, error) {
	unit := costUnit(g.Cost)
	r := summary.GateResult{Name: g.Name, Measure: g.Cost, Tag: g.Tag, Severity: string(g.Severity),
		Threshold: g.Threshold, RegressionMax: g.RegressionMax, Unit: unit}
	if err := checkTag(file, g, s); err != nil {
		return r, err
	}
	value, n, ok := costOf(s.Retrieval, g.Cost, g.Tag)
	if !ok {
		r.Status, r.Regression = StatusNotChecked, "not checked: no live retrieval"
		r.Reasons = []string{fmt.Sprintf("not checked: %s is measured only when the run comes from a retriever asked during the job (--retriever)", label(g))}
		return r, nil
	}
	r.Queries = n
	if g.Tag != "" && n < int64(g.MinQueries) {
		r.Status = StatusNotEnoughQuery
		r.Regression = "not checked: not enough queries"
		r.Reasons = []string{fmt.Sprintf("not enough queries: %d with %s, at least %d needed for a verdict", n, g.Tag, g.MinQueries)}
		return r, nil
	}
	r.Value = ptr(value)
	var failures []string
	if g.Threshold != nil && value > *g.Threshold+1e-9 {
		if g.Cost == "failed_queries" {
			failures = append(failures, fmt.Sprintf("%s got no answer from the retriever%s, more than the %.0f allowed",
				queries(int64(value)), tagSuffix(g.Tag), *g.Threshold))
		} else {
			failures = append(failures, fmt.Sprintf("%s is %s, above the ceiling of %s", label(g), valueText(unit, value), limitText(unit, *g.Threshold)))
		}
	}
	switch {
	case base == nil:
		r.Regression = RegressionNoBaseline
	case base.retrieval == nil:
		r.Regression = "not checked: " + base.what + " has no live retrieval to compare with"
	default:
		bv, _, found := costOf(base.retrieval, g.Cost, g.Tag)
		if !found {
			r.Regression = fmt.Sprintf("not checked: %s has no %s", base.what, g.Cost+tagSuffix(g.Tag))
			break
		}
		r.Baseline, r.Delta = ptr(bv), ptr(value-bv)
		r.Regression = RegressionOK
		if g.RegressionMax != nil && value-bv > *g.RegressionMax+1e-9 {
			r.Regression = RegressionRegressed
			failures = append(failures, fmt.Sprintf("%s rose from %s to %s (%s, more than the %s allowed)", label(g),
				valueText(unit, bv), valueText(unit, value), deltaText(unit, value-bv), limitText(unit, *g.RegressionMax)))
		}
	}
	settle(g, &r, failures)
	return r, nil
}

// noPValue says why the baseline gives no p-value for what (a measure,
// with its tag group if any).
func noPValue(base *baselineSource, what string) string {
	switch {
	case base.cmp == nil:
		return base.what + " has no per-query pairs (they come from a baseline run scored in the same job, --baseline-run)"
	case base.cmp.Permutations == 0:
		return "no permutation test ran (--permutations 0)"
	}
	return "the comparison with " + base.what + " has no p-value for " + what
}

// regressionUnchecked reports whether the gate has a regression limit
// that could not be checked for want of a baseline value.
func regressionUnchecked(g Gate, r summary.GateResult) bool {
	return g.RegressionMax != nil && r.Status != StatusNotEnoughQuery && strings.HasPrefix(r.Regression, "not checked")
}

// knownTagValues lists the values the summary has for the tag's name, for
// an error message.
func knownTagValues(s *summary.Summary, tag string) string {
	name, _, _ := strings.Cut(tag, "=")
	var vals []string
	for _, grp := range s.Groups {
		if grp.Tag == name {
			vals = append(vals, grp.Value)
		}
	}
	if len(vals) == 0 {
		return fmt.Sprintf(" (no query has a tag %q)", name)
	}
	return fmt.Sprintf(" (values of %s: %s)", name, strings.Join(vals, ", "))
}

func tagSuffix(tag string) string {
	if tag == "" {
		return ""
	}
	return " for " + tag
}

// label names a gate's measure for people: "retrieval recall@5", with the
// tag group if any.
func label(g Gate) string {
	return Humanize(g.Name) + tagSuffix(g.Tag)
}

// Humanize turns a gate or measure name into words: retrieval_recall_at_5
// becomes "retrieval recall@5", R@5 "recall@5", RR "MRR".
func Humanize(name string) string {
	if m, err := metric.Parse(name); err == nil && !strings.Contains(name, "_") {
		return MeasureWords(m)
	}
	if w, ok := costWords[strings.ToLower(name)]; ok {
		return w
	}
	words := strings.Fields(strings.ReplaceAll(strings.ReplaceAll(name, "_at_", "@"), "_", " "))
	for i, w := range words {
		base, cut, _ := strings.Cut(w, "@")
		if a, ok := acronyms[strings.ToLower(base)]; ok {
			words[i] = a
			if cut != "" {
				words[i] += "@" + cut
			}
		}
	}
	return strings.Join(words, " ")
}

// costWords name the cost figures in prose.
var costWords = map[string]string{
	"latency_p50_ms": "retrieval latency p50", "latency_p90_ms": "retrieval latency p90",
	"latency_p95_ms": "retrieval latency p95", "latency_p99_ms": "retrieval latency p99",
	"latency_max_ms": "the slowest retrieval", "latency_mean_ms": "mean retrieval latency",
	"failed_queries": "failed retrieval queries",
}

// acronyms are the measure names written in capitals in prose.
var acronyms = map[string]string{"mrr": "MRR", "map": "MAP", "ndcg": "nDCG", "rr": "RR", "ap": "AP"}

// MeasureWords names a measure for readers who are not IR specialists.
func MeasureWords(m metric.Measure) string {
	k := fmt.Sprint(m.K)
	switch m.Kind {
	case metric.KindRecall:
		return "recall@" + k
	case metric.KindPrecision:
		return "precision@" + k
	case metric.KindRR:
		if m.K > 0 {
			return "MRR@" + k
		}
		return "MRR"
	case metric.KindSuccess:
		return "hit rate@" + k
	case metric.KindAP:
		if m.K > 0 {
			return "MAP@" + k
		}
		return "MAP"
	case metric.KindJudged:
		return "judged@" + k
	case metric.KindBpref:
		return "bpref"
	}
	return m.String()
}

// pct formats a fraction as a percentage with one decimal.
func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// points formats a difference of fractions in percentage points, signed.
func points(d float64) string { return signed(d) + " points" }

// signed formats a difference of fractions as signed percentage points
// without the unit: "+0.4", "−5.8" (a minus sign, as everywhere in the
// reports), "±0.0".
func signed(d float64) string {
	p := 100 * d
	if math.Abs(p) < 0.05 {
		return "±0.0"
	}
	if p < 0 {
		return fmt.Sprintf("−%.1f", -p)
	}
	return fmt.Sprintf("+%.1f", p)
}

func pointsAbs(d float64) string { return fmt.Sprintf("%.1f points", 100*d) }

// pText states a p-value in a sentence: "p = 0.012", "p < 0.001".
func pText(p float64) string {
	if p < 0.001 {
		return "p " + summary.FormatP(p)
	}
	return "p = " + summary.FormatP(p)
}

// headline is the one sentence a reviewer reads first.
func headline(g *summary.Gate) string {
	first := func(status string) *summary.GateResult {
		for i := range g.Gates {
			if g.Gates[i].Status == status {
				return &g.Gates[i]
			}
		}
		return nil
	}
	count := func(status string) int {
		n := 0
		for _, r := range g.Gates {
			if r.Status == status {
				n++
			}
		}
		return n
	}
	switch g.Verdict {
	case VerdictFail:
		r := first(StatusFail)
		more := ""
		if n := count(StatusFail) - 1; n > 0 {
			more = fmt.Sprintf(" (and %d more blocking %s)", n, summary.Plural(n, "gate", "gates"))
		}
		return "❌ Blocked: " + r.Reasons[0] + more + "." + uncheckedNote(g)
	case VerdictWarn:
		r := first(StatusWarn)
		return "⚠️ Passes with warnings: " + r.Reasons[0] + "." + uncheckedNote(g)
	}
	// Every gate passed, had too few queries or could not be checked.
	n, skipped, unchecked, total := count(StatusPass), count(StatusNotEnoughQuery), count(StatusNotChecked), len(g.Gates)
	var s string
	switch {
	case n == 0:
		return "➖ No gate fails, but none was checked: " + noVerdict(g.Gates, skipped, unchecked) + "." + uncheckedNote(g)
	case n == total && n == 1:
		s = "✅ The 1 gate passes"
	case n == total:
		s = fmt.Sprintf("✅ All %d gates pass", n)
	default:
		s = fmt.Sprintf("✅ %d of %d gates %s", n, total, summary.Plural(n, "passes", "pass"))
		if unchecked > 0 {
			s += fmt.Sprintf(", %d not checked", unchecked)
		}
	}
	for _, r := range g.Gates {
		if r.Status == StatusPass && r.Value != nil {
			s += fmt.Sprintf(": %s %s", Humanize(r.Name), valueText(r.Unit, *r.Value))
			if r.Delta != nil {
				s += " (" + deltaText(r.Unit, *r.Delta) + ")"
			}
			break
		}
	}
	if skipped > 0 {
		s += fmt.Sprintf("; %d %s too few queries for a verdict", skipped, summary.Plural(skipped, "has", "have"))
	}
	return s + "." + uncheckedNote(g)
}

// noVerdict says why none of the gates has a verdict: skipped have too
// few queries, unchecked could not be checked (a regression limit without
// a baseline, a cost without a live retrieval).
func noVerdict(gates []summary.GateResult, skipped, unchecked int) string {
	total := len(gates)
	onlyLimits := true // every gate not checked has a regression limit and nothing else
	for _, r := range gates {
		onlyLimits = onlyLimits && (r.Status != StatusNotChecked || r.Threshold == nil)
	}
	var parts []string
	switch {
	case skipped == total && total == 1:
		return "the 1 gate has too few queries for a verdict"
	case skipped == total:
		return fmt.Sprintf("all %d gates have too few queries for a verdict", total)
	case unchecked == total && total == 1 && onlyLimits:
		return "the 1 gate has only a regression limit, and it was not checked"
	case unchecked == total && onlyLimits:
		return fmt.Sprintf("all %d gates have only a regression limit, and none was checked", total)
	case unchecked == total && total == 1:
		return "the 1 gate could not be checked"
	case unchecked == total:
		return fmt.Sprintf("none of the %d gates could be checked", total)
	}
	if skipped > 0 {
		parts = append(parts, fmt.Sprintf("%d %s too few queries for a verdict", skipped, summary.Plural(skipped, "has", "have")))
	}
	if unchecked > 0 {
		parts = append(parts, fmt.Sprintf("%d %s not checked", unchecked, summary.Plural(unchecked, "was", "were")))
	}
	return strings.Join(parts, ", ")
}

// uncheckedNote is the headline's note on regression limits that were not
// checked, so that no reader takes a pass for a checked one.
func uncheckedNote(g *summary.Gate) string {
	n, noBaseline := 0, true
	for _, r := range g.Gates {
		if r.RegressionMax != nil && r.Status != StatusNotEnoughQuery && strings.HasPrefix(r.Regression, "not checked") {
			n++
			noBaseline = noBaseline && r.Regression == RegressionNoBaseline
		}
	}
	switch {
	case n == 0:
		return ""
	case noBaseline:
		return " Regression limits not checked: no baseline."
	}
	return fmt.Sprintf(" Regression limit not checked for %d %s: the baseline lacks the value.", n, summary.Plural(n, "gate", "gates"))
}

// queries counts queries: "1 query", "12 queries".
func queries(n int64) string { return summary.Count(n, "query", "queries") }
