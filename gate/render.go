package gate

import (
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

func optPct(x *float64) string {
	if x == nil {
		return "–"
	}
	return pct(*x)
}

func optPoints(x *float64) string {
	if x == nil {
		return "–"
	}
	return points(*x)
}

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
	if r.Threshold != nil {
		parts = append(parts, "≥ "+pct(*r.Threshold))
	}
	if r.RegressionMax != nil {
		parts = append(parts, "drop ≤ "+pointsAbs(*r.RegressionMax))
	}
	return strings.Join(parts, ", ")
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
	}
	return "no verdict"
}

// WriteTable writes the gate table for a terminal and the verdict line.
func WriteTable(w io.Writer, g *summary.Gate) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "gate\tmeasure\tvalue\tbaseline\tΔ\t95% CI\tlimit\tif it fails\tresult")
	for _, r := range g.Gates {
		fmt.Fprintf(tw, "%s\t%s%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Measure, tagSuffix(r.Tag), optPct(r.Value), optPct(r.Baseline),
			optPoints(r.Delta), ciText(r), thresholdText(r), ifFails(r), statusWord(r))
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

// WriteComment writes the pull-request comment of a gated summary:
// headline, gate table, the tags where the first gated measure moved most
// against the baseline, the most regressed queries. It stays short: at most
// 5 tags and 5 queries. r.History is not used.
func WriteComment(w io.Writer, r Report) error {
	s := r.Summary
	g := s.Gate
	base := reportBaseline(s, r.Baseline)
	var b strings.Builder
	fmt.Fprintf(&b, "### evalgate: %s\n\n%s\n\n", strings.ToUpper(g.Verdict), g.Headline)
	b.WriteString("| gate | value | baseline | change | 95% CI | limit | if it fails | result |\n|---|---|---|---|---|---|---|---|\n")
	for _, r := range g.Gates {
		fmt.Fprintf(&b, "| %s `%s`%s | %s | %s | %s | %s | %s | %s | %s %s |\n", mdEscape(Humanize(r.Name)), r.Measure, mdEscape(tagSuffix(r.Tag)),
			optPct(r.Value), optPct(r.Baseline), optPoints(r.Delta), ciText(r), thresholdText(r), ifFails(r), statusIcon(r), statusWord(r))
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
	if len(g.Gates) > 0 && base != nil {
		m := g.Gates[0].Measure
		moves := tagMoves(s, base, m)
		if len(moves) > 0 {
			fmt.Fprintf(&b, "\n**Where %s moved most** (by tag):\n\n| tag | queries | value | baseline | change |\n|---|---|---|---|---|\n", MeasureWordsName(m))
			for _, mv := range moves[:min(5, len(moves))] {
				fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", mdEscape(mv.tag), mv.queries, pct(mv.value), pct(mv.base), points(mv.value-mv.base))
			}
		}
	}
	if c := s.Comparison; c != nil && len(c.Regressed) > 0 {
		fmt.Fprintf(&b, "\n**Most regressed queries** (%s; rank of the first relevant document, before → after):\n\n| query | text | %s | first relevant rank |\n|---|---|---|---|\n",
			MeasureWordsName(c.RegressedMeasure), MeasureWordsName(c.RegressedMeasure))
		for _, q := range c.Regressed[:min(5, len(c.Regressed))] {
			text := q.Query
			if len(text) > 80 {
				text = text[:77] + "…"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s → %s | %s → %s |\n", mdEscape(q.QueryID), mdEscape(text), pct(q.Baseline), pct(q.Value),
				rankText(q.BaselineRank), rankText(q.Rank))
		}
	}
	for _, n := range g.Notes {
		fmt.Fprintf(&b, "\n> %s\n", mdEscape(n))
	}
	fmt.Fprintf(&b, "\n<sub>%s scored; gold set %s; run %s.</sub>\n", queries(s.Counts.ScoredQueries), mdEscape(s.Inputs.Gold.Path), mdEscape(s.Inputs.Run.Path))
	_, err := io.WriteString(w, b.String())
	return err
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

// WriteJUnit writes one test case per gate: error gates that fail are
// failures; warning gates that fail pass with the warning in system-out
// (they must not block); gates without enough queries are skipped.
func WriteJUnit(w io.Writer, g *summary.Gate) error {
	suite := junitSuite{Name: "evalgate gates"}
	for _, r := range g.Gates {
		c := junitCase{Name: r.Name, ClassName: "evalgate." + strings.ReplaceAll(r.Measure, ".", "_")}
		detail := fmt.Sprintf("%s%s = %s (baseline %s, change %s, 95%% CI %s); limit %s; if it fails: %s",
			r.Measure, tagSuffix(r.Tag), optPct(r.Value), optPct(r.Baseline), optPoints(r.Delta), ciText(r), thresholdText(r), ifFails(r))
		if r.RegressionMax != nil {
			// Without a regression limit there is nothing to check.
			detail += "; regression " + r.Regression
		}
		switch r.Status {
		case StatusFail:
			c.Failure = &junitFailure{Message: strings.Join(r.Reasons, "; "), Type: "gate-" + r.Severity, Text: detail}
			suite.Failures++
		case StatusNotEnoughQuery:
			c.Skipped = &junitSkipped{Message: strings.Join(r.Reasons, "; ")}
			suite.Skipped++
		case StatusWarn:
			c.SystemOut = "WARNING (does not block the merge): " + strings.Join(r.Reasons, "; ") + "\n" + detail
		default:
			c.SystemOut = detail
		}
		suite.Cases = append(suite.Cases, c)
		suite.Tests++
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
