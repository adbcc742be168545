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
	StatusPass            = "pass"
	StatusFail            = "fail"
	StatusWarn            = "warn"
	StatusNotEnoughQuery  = "not-enough-queries"
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

// Options controls Evaluate.
type Options struct {
	// Baseline is a previous summary to compare with, when the summary has
	// no baseline run of its own.
	Baseline *summary.Summary
	// RequireBaseline makes a missing baseline an error instead of a
	// "not checked" note.
	RequireBaseline bool
	// AllowGoldChange accepts a baseline scored on a different gold set
	// (the verdict notes it).
	AllowGoldChange bool
}

// baselineSource provides baseline values and, for a baseline run scored
// in the same job, the paired statistics.
type baselineSource struct {
	overall func(name string) (float64, bool)
	group   func(tag, name string) (float64, int64, bool)
	cmp     *summary.Comparison
	what    string
	curve   []float64 // the baseline's recall@k, k = 1…, if known
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
		src := &baselineSource{overall: saved.Value, group: saved.GroupValue, what: "the saved summary of " + saved.Inputs.Run.Path}
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
				return nil, fmt.Errorf("%w (%s, now %s); compare on the same gold set or pass --allow-gold-change",
					ErrGoldChanged, b.Inputs.Gold.Digest, s.Inputs.Gold.Digest)
			}
			*notes = append(*notes, "The baseline was scored on a different gold set (--allow-gold-change): changes mix model and gold-set differences.")
		}
		if b.Config.RelLevel != s.Config.RelLevel || b.Config.Averaging != s.Config.Averaging || b.Config.Depth != s.Config.Depth {
			*notes = append(*notes, fmt.Sprintf("The baseline was scored with other options (rel level %d, averaging %s, depth %d; now %d, %s, %d).",
				b.Config.RelLevel, b.Config.Averaging, b.Config.Depth, s.Config.RelLevel, s.Config.Averaging, s.Config.Depth))
		}
		return reportBaseline(s, b), nil
	}
	return nil, nil
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
	for _, g := range c.Gates {
		r, err := evaluateGate(c.File, g, s, base)
		if err != nil {
			return nil, err
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

// evaluateGate gates s on g; file names the criteria file in errors.
func evaluateGate(file string, g Gate, s *summary.Summary, base *baselineSource) (summary.GateResult, error) {
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
		if !ok && !s.HasGroup(g.Tag) {
			// A gate on a group no query belongs to is almost always a
			// typo; passing it would switch the gate off. It is an error
			// in the criteria, so it names their file and line.
			err := fmt.Errorf("gate %q: no query has the tag %s%s", g.Name, g.Tag, knownTagValues(s, g.Tag))
			if file == "" {
				return r, err
			}
			return r, &schema.InputError{File: file, Line: int64(max(g.TagLine, g.Line, 1)), Field: "tag", Err: err}
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
	r.Reasons = append(failures, r.Reasons...)
	if regressionUnchecked(g, r) {
		r.Reasons = append(r.Reasons, "regression "+r.Regression)
	}
	switch {
	case len(failures) == 0:
		r.Status = StatusPass
	case g.Severity == SeverityError:
		r.Status = StatusFail
	default:
		r.Status = StatusWarn
	}
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
		return "p < 0.001"
	}
	return "p = " + pfmt(p)
}

func pfmt(p float64) string {
	if p < 0.001 {
		return "< 0.001"
	}
	return fmt.Sprintf("%.3f", p)
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
	// Every gate passed or had too few queries.
	n, skipped, total := count(StatusPass), count(StatusNotEnoughQuery), len(g.Gates)
	var s string
	switch {
	case n == 0 && total == 1:
		return "✅ No gate fails, but the 1 gate has too few queries for a verdict." + uncheckedNote(g)
	case n == 0:
		return fmt.Sprintf("✅ No gate fails, but all %d gates have too few queries for a verdict.", total) + uncheckedNote(g)
	case skipped > 0:
		s = fmt.Sprintf("✅ %d of %d gates %s", n, total, summary.Plural(n, "passes", "pass"))
	case n == 1:
		s = "✅ The 1 gate passes"
	default:
		s = fmt.Sprintf("✅ All %d gates pass", n)
	}
	for _, r := range g.Gates {
		if r.Status == StatusPass && r.Value != nil {
			s += fmt.Sprintf(": %s %s", Humanize(r.Name), pct(*r.Value))
			if r.Delta != nil {
				s += " (" + points(*r.Delta) + ")"
			}
			break
		}
	}
	if skipped > 0 {
		s += fmt.Sprintf("; %d %s too few queries for a verdict", skipped, summary.Plural(skipped, "has", "have"))
	}
	return s + "." + uncheckedNote(g)
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
