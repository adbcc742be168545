package summary

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// WriteTable writes the human-readable table: the overall measures, the
// per-tag measures, the counts and the warnings.
func (s *Summary) WriteTable(w io.Writer) error {
	var b strings.Builder
	c := s.Counts
	fmt.Fprintf(&b, "evalgate: %s scored (gold set %d, run %d)\n", Count(c.ScoredQueries, "query", "queries"), c.GoldQueries, c.RunQueries)
	if s.Baseline != nil {
		fmt.Fprintf(&b, "baseline: %s, %s\n", s.Baseline.Input.Path, s.Baseline.ScoredOn())
	}
	if n := s.JudgedOnlyNote(); n != "" {
		b.WriteString(n + "\n")
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	if s.Baseline == nil {
		fmt.Fprintf(tw, "measure\tvalue\tn\n")
		for _, m := range s.Measures {
			fmt.Fprintf(tw, "%s\t%s\t%d\n", m.Name, FormatValue(m), c.ScoredQueries)
		}
	} else {
		fmt.Fprintf(tw, "measure\tvalue\tbaseline\tdelta\t95%% CI\tp\tn\n")
		for i, m := range s.Measures {
			bm := s.Baseline.Measures[i]
			ci, p := "", ""
			if mc := s.Comparison.Measure(m.Name); mc != nil {
				if mc.CILow != nil && mc.CIHigh != nil {
					ci = "[" + Signed(*mc.CILow) + ", " + Signed(*mc.CIHigh) + "]"
				}
				if mc.PValue != nil {
					p = FormatP(*mc.PValue)
				}
			}
			delta := ""
			if m.Kind == "mean" {
				delta = Signed(m.Value - bm.Value)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", m.Name, FormatValue(m), FormatValue(bm), delta, ci, p, c.ScoredQueries)
		}
	}
	tw.Flush()
	if len(s.Groups) > 0 {
		b.WriteString("\nper tag:\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "tag\tn")
		for _, m := range s.Measures {
			fmt.Fprintf(tw, "\t%s", m.Name)
		}
		fmt.Fprintln(tw)
		for _, g := range s.Groups {
			fmt.Fprintf(tw, "%s=%s\t%d", g.Tag, g.Value, g.Queries)
			for _, m := range g.Measures {
				fmt.Fprintf(tw, "\t%s", FormatValue(m))
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	if r := s.Retrieval; r != nil {
		r.writeTable(&b)
	}
	if s.Judgments != nil && s.Filled != nil {
		s.writeFilled(&b)
	}
	if len(s.Warnings) > 0 {
		b.WriteString("\nwarnings:\n")
		for _, x := range s.Warnings {
			fmt.Fprintf(&b, "  - %s\n", x)
		}
	}
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	return nil
}

// FormatValue prints a mean with four decimals and a whole sum (NumQ,
// NumRel...) as an integer.
func FormatValue(m Measure) string {
	if m.Kind == "sum" && m.Value == math.Trunc(m.Value) && math.Abs(m.Value) < 1e15 {
		return fmt.Sprintf("%d", int64(m.Value))
	}
	return fmt.Sprintf("%.4f", m.Value)
}

// Signed prints a difference with four decimals and its sign, the minus as
// U+2212 like the gate's reports.
func Signed(x float64) string {
	return strings.Replace(fmt.Sprintf("%+.4f", x), "-", "−", 1)
}

// FormatP writes a p-value the one way every output does: three decimals,
// and "< 0.001" below that (a randomization test's p-value is never 0, so
// "0.000" would claim too much).
func FormatP(p float64) string {
	if p < 0.001 {
		return "< 0.001"
	}
	return fmt.Sprintf("%.3f", p)
}

// WriteTREC writes trec_eval-style lines: measure name, "all", value —
// with trec_eval's names where trec_eval has the measure. Tag groups are
// not part of this format.
func (s *Summary) WriteTREC(w io.Writer) error {
	var b strings.Builder
	for _, m := range s.Measures {
		fmt.Fprintf(&b, "%-22s\tall\t%s\n", m.TRECName, FormatValue(m))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write trec output: %w", err)
	}
	return nil
}

// JudgedOnlyNote says that the rankings were scored with their judged
// documents only (--judged-only) and how many unjudged ones were dropped;
// it is empty otherwise. The values are not those of the full rankings,
// so every rendering states it.
func (s *Summary) JudgedOnlyNote() string {
	if !s.Config.JudgedOnly {
		return ""
	}
	return fmt.Sprintf("judged documents only (--judged-only): %s dropped from the rankings",
		Count(s.Counts.UnjudgedDropped, "unjudged document", "unjudged documents"))
}
