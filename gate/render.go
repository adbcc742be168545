package gate

import (
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/evalgate/evalgate/summary"
)

func ciText(r summary.GateResult) string { return ciRange(r.CILow, r.CIHigh) }

// ciRange formats a confidence interval of a difference: "[−7.1, −4.6]
// points", or "–" when there is none.
func ciRange(lo, hi *float64) string {
	if lo == nil || hi == nil {
		return "–"
	}
	return fmt.Sprintf("[%s, %s] points", signed(*lo), signed(*hi))
}

func thresholdText(r summary.GateResult) string {
	var parts []string
	if r.Unit != UnitFraction { // a cost: a ceiling and a largest rise
		if r.Threshold != nil {
			parts = append(parts, "≤ "+limitText(r.Unit, *r.Threshold))
		}
		if r.RegressionMax != nil {
			parts = append(parts, "rise ≤ "+limitText(r.Unit, *r.RegressionMax))
		}
		return strings.Join(parts, ", ")
	}
	if r.Threshold != nil {
		parts = append(parts, "≥ "+pct(*r.Threshold))
	}
	if r.RegressionMax != nil {
		parts = append(parts, "drop ≤ "+pointsAbs(*r.RegressionMax))
	}
	return strings.Join(parts, ", ")
}

// gateValue formats a gate's value or baseline in the gate's unit, "–"
// when absent.
func gateValue(r summary.GateResult, x *float64) string {
	if x == nil {
		return "–"
	}
	return valueText(r.Unit, *x)
}

// gateDelta formats a gate's change from the baseline in its unit.
func gateDelta(r summary.GateResult) string {
	if r.Delta == nil {
		return "–"
	}
	return deltaText(r.Unit, *r.Delta)
}

// ifFails says what a gate's failure does, for readers to whom "error"
// next to a result reads as "passed with an error".
func ifFails(r summary.GateResult) string {
	switch Severity(r.Severity) {
	case SeverityError:
		return "blocks merge"
	case SeverityWarning:
		return "warning only"
	}
	return r.Severity
}

// statusIcon marks a gate's result in Markdown.
func statusIcon(r summary.GateResult) string {
	switch r.Status {
	case StatusPass:
		return "✅"
	case StatusFail:
		return "❌"
	case StatusWarn:
		return "⚠️"
	}
	return "➖"
}

func statusWord(r summary.GateResult) string {
	switch r.Status {
	case StatusPass:
		return "pass"
	case StatusFail:
		return "FAIL"
	case StatusWarn:
		return "warn"
	case StatusNotChecked:
		return "not checked"
	}
	return "no verdict"
}

// WriteTable writes the gate table for a terminal and the verdict line.
func WriteTable(w io.Writer, g *summary.Gate) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "gate\tmeasure\tvalue\tbaseline\tΔ\t95% CI\tlimit\tif it fails\tresult")
	for _, r := range g.Gates {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, measureLabel(r), gateValue(r, r.Value), gateValue(r, r.Baseline),
			gateDelta(r), ciText(r), thresholdText(r), ifFails(r), statusWord(r))
	}
	tw.Flush()
	for _, r := range g.Gates {
		for _, why := range r.Reasons {
			fmt.Fprintf(&b, "  %s: %s\n", r.Name, why)
		}
	}
	for _, n := range g.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	fmt.Fprintf(&b, "\nverdict: %s (exit code %d) — %s\n", strings.ToUpper(g.Verdict), g.ExitCode, g.Headline)
	_, err := io.WriteString(w, b.String())
	return err
}

// tagMove is one tag group's change of a measure.
type tagMove struct {
	tag              string
	queries          int64
	value, base, abs float64
}

// tagMoves returns, for a measure, the tag groups ordered by how much the
// measure moved against the baseline.
func tagMoves(s *summary.Summary, base *baselineSource, measure string) []tagMove {
	if base == nil {
		return nil
	}
	var out []tagMove
	for _, grp := range s.Groups {
		tag := grp.Tag + "=" + grp.Value
		v, n, ok := s.GroupValue(tag, measure)
		b, _, bok := base.group(tag, measure)
		if ok && bok {
			out = append(out, tagMove{tag: tag, queries: n, value: v, base: b, abs: math.Abs(v - b)})
		}
	}
	slices.SortStableFunc(out, func(a, b tagMove) int {
		switch {
		case a.abs > b.abs:
			return -1
		case a.abs < b.abs:
			return 1
		}
		return strings.Compare(a.tag, b.tag)
	})
	return out
}

func mdEscape(s string) string {
	r := strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", ">", "&gt;")
	return r.Replace(s)
}

// WriteComment writes the pull-request comment of a summary: headline,
// gate table, the tags where the focus measure (that of the first failing
// gate, else of the first gate, else the first mean measure) moved most
// against the baseline — or, without a baseline, where it is lowest — and
// the most regressed queries. Without criteria the headline and the gate
// table give way to the table of every measure. It stays short: at most 5
// tags and 5 queries. r.History is not used.
func WriteComment(w io.Writer, r Report) error {
	s := r.Summary
	g := s.Gate
	base := reportBaseline(s, r.Baseline)
	var b strings.Builder
	if g != nil {
		fmt.Fprintf(&b, "### evalgate: %s\n\n%s\n\n", strings.ToUpper(g.Verdict), g.Headline)
		writeCommentGates(&b, g)
	} else {
		fmt.Fprintf(&b, "### evalgate: %s scored\n\n", queries(s.Counts.ScoredQueries))
		writeCommentMeasures(&b, s, base)
	}
	if m := focusMeasure(s); m != "" {
		writeCommentTags(&b, s, base, m)
	}
	if c := s.Comparison; c != nil && len(c.Regressed) > 0 {
		fmt.Fprintf(&b, "\n**Most regressed queries** (%s; rank of the first relevant document, before → after):\n\n| query | text | %s | first relevant rank |\n|---|---|---|---|\n",
			MeasureWordsName(c.RegressedMeasure), MeasureWordsName(c.RegressedMeasure))
		for _, q := range c.Regressed[:min(5, len(c.Regressed))] {
			text := q.Query
			if len(text) > 80 {
				text = text[:77] + "…"
			}
			fmt.Fprintf(&b, "| %s | %s | %s → %s | %s → %s |\n", codeSpan(q.QueryID), mdEscape(text), pct(q.Baseline), pct(q.Value),
				rankText(q.BaselineRank), rankText(q.Rank))
		}
	}
	if lr := s.Retrieval; lr != nil {
		writeCommentRetrieval(&b, lr, base)
	}
	if s.Judgments != nil && s.Filled != nil {
		writeCommentFilled(&b, s)
	}
	if g != nil {
		for _, n := range g.Notes {
			fmt.Fprintf(&b, "\n> %s\n", mdEscape(n))
		}
	}
	baseline := ""
	if s.Baseline != nil {
		baseline = fmt.Sprintf("; baseline run %s, %s", mdEscape(s.Baseline.Input.Path), s.Baseline.ScoredOn())
	}
	if n := s.JudgedOnlyNote(); n != "" {
		baseline += "; " + n
	}
	fmt.Fprintf(&b, "\n<sub>%s scored; gold set %s; run %s%s.</sub>\n", queries(s.Counts.ScoredQueries), mdEscape(s.Inputs.Gold.Path),
		mdEscape(s.Inputs.Run.Path), baseline)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeCommentRetrieval writes the live retrieval's costs: latency
// overall (against a saved baseline's, when it was a live retrieval too)
// and the slowest tag groups, and the failed queries.
func writeCommentRetrieval(b *strings.Builder, r *summary.Retrieval, base *baselineSource) {
	fmt.Fprintf(b, "\n**Retrieval** (%s): %s.\n\n| latency | p50 | p90 | p95 | p99 | max | mean |\n|---|---|---|---|---|---|---|\n",
		mdEscape(r.Retriever.Path), mdEscape(r.Line()))
	row := func(name string, l summary.Latency) {
		fmt.Fprintf(b, "| %s | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.1f ms | %.1f ms |\n", mdEscape(name), l.P50, l.P90, l.P95, l.P99, l.Max, l.Mean)
	}
	row("this run", r.Latency)
	if base != nil && base.retrieval != nil {
		row("baseline", base.retrieval.Latency)
	}
	groups := slices.Clone(r.Groups)
	slices.SortStableFunc(groups, func(a, b summary.GroupLatency) int { return cmp.Compare(b.Latency.P95, a.Latency.P95) })
	for _, g := range groups[:min(3, len(groups))] {
		row(g.Tag+"="+g.Value, g.Latency)
	}
	for _, f := range r.FailedQueries[:min(5, len(r.FailedQueries))] {
		fmt.Fprintf(b, "\n- failed: %s: %s", codeSpan(f.QueryID), mdEscape(f.Error))
	}
	if len(r.FailedQueries) > 0 {
		b.WriteString("\n")
	}
	if n := r.Failed - int64(min(5, len(r.FailedQueries))); n > 0 {
		fmt.Fprintf(b, "- … and %d more failed (summary.json lists them)\n", n)
	}
}

// writeCommentFilled writes the measures with human judgments only and
// with LLM judgments filled in, and what the top k rests on.
func writeCommentFilled(b *strings.Builder, s *summary.Summary) {
	j := s.Judgments
	fmt.Fprintf(b, "\n**With LLM judgments filled in**: %s.", mdEscape(j.Line()))
	for _, c := range j.Coverage {
		fmt.Fprintf(b, " %s.", mdEscape(upperFirst(c.Line())))
	}
	if a := j.Agreement; a != nil {
		fmt.Fprintf(b, " %s.", mdEscape(upperFirst(a.Line())))
	}
	b.WriteString(" LLM labels agree with people less among close systems, where a gate decides: prefer the human values when they differ.\n\n| measure | human | LLM-filled | change |\n|---|---|---|---|\n")
	for _, m := range s.Measures {
		fv, ok := s.Filled.Value(m.Name)
		if !ok || m.Kind != "mean" {
			continue
		}
		fmt.Fprintf(b, "| %s %s | %s | %s | %s |\n", mdEscape(Humanize(m.Name)), codeSpan(m.Name), pct(m.Value), pct(fv), points(fv-m.Value))
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// writeCommentGates writes the gate table and the reasons.
func writeCommentGates(b *strings.Builder, g *summary.Gate) {
	b.WriteString("| gate | value | baseline | change | 95% CI | limit | if it fails | result |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range g.Gates {
		fmt.Fprintf(b, "| %s %s%s | %s | %s | %s | %s | %s | %s | %s %s |\n", mdEscape(Humanize(r.Name)), codeSpan(r.Measure), mdEscape(strings.TrimPrefix(measureLabel(r), r.Measure)),
			gateValue(r, r.Value), gateValue(r, r.Baseline), gateDelta(r), ciText(r), thresholdText(r), ifFails(r), statusIcon(r), statusWord(r))
	}
	var reasons []string
	for _, r := range g.Gates {
		for _, why := range r.Reasons {
			reasons = append(reasons, fmt.Sprintf("- %s **%s**: %s", statusIcon(r), mdEscape(r.Name), mdEscape(why)))
		}
	}
	if len(reasons) > 0 {
		b.WriteString("\n" + strings.Join(reasons, "\n") + "\n")
	}
}

// writeCommentMeasures writes every measure, against the baseline if any.
func writeCommentMeasures(b *strings.Builder, s *summary.Summary, base *baselineSource) {
	if base == nil {
		b.WriteString("| measure | value |\n|---|---|\n")
	} else {
		b.WriteString("| measure | value | baseline | change | 95% CI | p |\n|---|---|---|---|---|---|\n")
	}
	for _, m := range s.Measures {
		fmt.Fprintf(b, "| %s %s | %s |", mdEscape(Humanize(m.Name)), codeSpan(m.Name), fmtValue(m))
		if base != nil {
			bv, found := base.overall(m.Name)
			ci, p := "–", "–"
			if mc := s.Comparison.Measure(m.Name); mc != nil {
				ci = ciRange(mc.CILow, mc.CIHigh)
				if mc.PValue != nil {
					p = summary.FormatP(*mc.PValue)
				}
			}
			switch {
			case !found:
				b.WriteString(" – | – | – | – |")
			case m.Kind == "mean":
				fmt.Fprintf(b, " %s | %s | %s | %s |", pct(bv), points(m.Value-bv), ci, p)
			default:
				fmt.Fprintf(b, " %.0f | %+.0f | – | – |", bv, m.Value-bv)
			}
		}
		b.WriteString("\n")
	}
}

// writeCommentTags writes the tag groups where measure m moved most
// against the baseline, or, without one, where it is lowest.
func writeCommentTags(b *strings.Builder, s *summary.Summary, base *baselineSource, m string) {
	if base != nil {
		moves := tagMoves(s, base, m)
		if len(moves) == 0 {
			return
		}
		fmt.Fprintf(b, "\n**Where %s moved most** (by tag):\n\n| tag | queries | value | baseline | change |\n|---|---|---|---|---|\n", MeasureWordsName(m))
		for _, mv := range moves[:min(5, len(moves))] {
			fmt.Fprintf(b, "| %s | %d | %s | %s | %s |\n", mdEscape(mv.tag), mv.queries, pct(mv.value), pct(mv.base), points(mv.value-mv.base))
		}
		return
	}
	type group struct {
		tag     string
		queries int64
		value   float64
	}
	var groups []group
	for _, grp := range s.Groups {
		tag := grp.Tag + "=" + grp.Value
		if v, n, ok := s.GroupValue(tag, m); ok {
			groups = append(groups, group{tag, n, v})
		}
	}
	if len(groups) == 0 {
		return
	}
	slices.SortStableFunc(groups, func(a, b group) int { return cmp.Compare(a.value, b.value) })
	fmt.Fprintf(b, "\n**%s by tag** (lowest first):\n\n| tag | queries | value |\n|---|---|---|\n", MeasureWordsName(m))
	for _, g := range groups[:min(5, len(groups))] {
		fmt.Fprintf(b, "| %s | %d | %s |\n", mdEscape(g.tag), g.queries, pct(g.value))
	}
	if len(groups) > 5 {
		fmt.Fprintf(b, "\n(and %d more tags)\n", len(groups)-5)
	}
}

// focusMeasure is the measure the reports single out: that of the first
// gate that fails, else of the first gate that warns, else of the first
// gate, else the first mean measure; "" if there is none.
func focusMeasure(s *summary.Summary) string {
	if g := s.Gate; g != nil && len(g.Gates) > 0 {
		for _, status := range []string{StatusFail, StatusWarn} {
			for _, r := range g.Gates {
				if r.Status == status {
					return r.Measure
				}
			}
		}
		return g.Gates[0].Measure
	}
	for _, m := range s.Measures {
		if m.Kind == "mean" {
			return m.Name
		}
	}
	return ""
}

// codeSpan writes s as a Markdown code span in a table cell: as it is
// (HTML entities are not decoded in code spans, so nothing is escaped but
// the cell separator), fenced by more backticks than s has in a row.
func codeSpan(s string) string {
	s = strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
	run, longest := 0, 0
	for _, c := range s {
		if c == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") || (s != "" && strings.Trim(s, " ") == "") {
		s = " " + s + " "
	}
	return fence + s + fence
}

// MeasureWordsName is MeasureWords for a canonical measure name.
func MeasureWordsName(name string) string { return Humanize(name) }

func rankText(r int) string {
	if r == 0 {
		return "none"
	}
	return fmt.Sprint(r)
}

// AppendStepSummary appends the comment to $GITHUB_STEP_SUMMARY when that
// variable names a file (GitHub Actions).
func AppendStepSummary(comment []byte) error {
	path := os.Getenv("GITHUB_STEP_SUMMARY")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open GITHUB_STEP_SUMMARY: %w", err)
	}
	if _, err := f.Write(append(comment, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("write GITHUB_STEP_SUMMARY: %w", err)
	}
	return f.Close()
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

func (s *junitSuite) add(c junitCase) {
	s.Cases = append(s.Cases, c)
	s.Tests++
	if c.Failure != nil {
		s.Failures++
	}
	if c.Skipped != nil {
		s.Skipped++
	}
}

// gateCase is a gate's test case.
func gateCase(r summary.GateResult) junitCase {
	c := junitCase{Name: r.Name, ClassName: "evalgate." + strings.ReplaceAll(r.Measure, ".", "_")}
	detail := fmt.Sprintf("%s = %s (baseline %s, change %s, 95%% CI %s); limit %s; if it fails: %s",
		measureLabel(r), gateValue(r, r.Value), gateValue(r, r.Baseline), gateDelta(r), ciText(r), thresholdText(r), ifFails(r))
	if r.RegressionMax != nil {
		// Without a regression limit there is nothing to check.
		detail += "; regression " + r.Regression
	}
	switch r.Status {
	case StatusFail:
		c.Failure = &junitFailure{Message: strings.Join(r.Reasons, "; "), Type: "gate-" + r.Severity, Text: detail}
	case StatusNotEnoughQuery, StatusNotChecked:
		c.Skipped = &junitSkipped{Message: strings.Join(r.Reasons, "; ")}
		c.SystemOut = detail
	case StatusWarn:
		c.SystemOut = "WARNING (does not block the merge): " + strings.Join(r.Reasons, "; ") + "\n" + detail
	default:
		c.SystemOut = detail
	}
	return c
}

// measureSuite has one passing test case per mean measure of an ungated
// summary, so that CI test reports list the values.
func measureSuite(s *summary.Summary) junitSuite {
	suite := junitSuite{Name: "evalgate measures"}
	var base *baselineSource
	if s.Baseline != nil {
		base = reportBaseline(s, nil)
	}
	for _, m := range s.Measures {
		if m.Kind != "mean" {
			continue
		}
		out := fmt.Sprintf("%s = %s over %s", m.Name, pct(m.Value), queries(s.Counts.ScoredQueries))
		if base != nil {
			if bv, ok := base.overall(m.Name); ok {
				out += fmt.Sprintf(" (baseline %s, change %s)", pct(bv), points(m.Value-bv))
			}
		}
		suite.add(junitCase{Name: m.Name, ClassName: "evalgate.measure", SystemOut: out})
	}
	return suite
}

// WriteJUnit writes one test case per gate of s.Gate: error gates that
// fail are failures; warning gates that fail pass with the warning in
// system-out (they must not block); gates without enough queries and
// gates that could not be checked are skipped, with the reason. A summary
// without criteria gets one passing test case per mean measure, with its
// value in system-out.
func WriteJUnit(w io.Writer, s *summary.Summary) error {
	suite := junitSuite{Name: "evalgate gates"}
	if s.Gate == nil {
		suite = measureSuite(s)
	} else {
		for _, r := range s.Gate.Gates {
			suite.add(gateCase(r))
		}
	}
	doc := junitSuites{Name: "evalgate", Tests: suite.Tests, Failures: suite.Failures, Skipped: suite.Skipped, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write junit: %w", err)
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// measureLabel names what a gate checks: the measure, its tag group, and
// whether LLM judgments are filled in.
func measureLabel(r summary.GateResult) string {
	out := r.Measure + tagSuffix(r.Tag)
	if r.Judgments == JudgmentsFilled {
		out += " (LLM-filled)"
	}
	return out
}
