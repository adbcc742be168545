package summary

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

// Judgments describes LLM judgments filled into a gold set.
type Judgments struct {
	// Files are the judgments files read.
	Files []string `json:"files"`
	// Judgments counts the pairs the files grade; Filled those added to
	// the gold set; HumanWins those a human judged already (the human
	// grade stays); UnknownQueries those of queries the gold set lacks;
	// Rejudged those graded again to measure agreement (they never fill).
	Judgments      int64    `json:"judgments"`
	Filled         int64    `json:"filled"`
	HumanWins      int64    `json:"human_wins"`
	UnknownQueries int64    `json:"unknown_queries"`
	Rejudged       int64    `json:"rejudged"`
	Models         []string `json:"models"`
	// Coverage says, for each Judged@k measured, what the top k rests
	// on: the share of its documents judged by humans, by the LLM, and by
	// nobody (means over the scored queries).
	Coverage []Coverage `json:"coverage,omitempty"`
	// Agreement compares the re-judged pairs' LLM grades with the gold
	// set's; nil without re-judged pairs.
	Agreement *Agreement `json:"agreement,omitempty"`
	// Orderings, in a compare of several systems, gives per measure
	// Kendall's τ-b between the systems' order by human values and by
	// LLM-filled values.
	Orderings []Ordering `json:"orderings,omitempty"`
}

// Ordering is how far the order of systems by one measure stays the same
// when LLM judgments are filled in.
type Ordering struct {
	Measure string   `json:"measure"`
	Systems int      `json:"systems"`
	Tau     *float64 `json:"kendall_tau_b,omitempty"`
	Note    string   `json:"note,omitempty"` // why τ is not defined
}

// Coverage is what the top Depth documents rest on.
type Coverage struct {
	Depth    int     `json:"depth"`
	Human    float64 `json:"human"`
	LLM      float64 `json:"llm"`
	Unjudged float64 `json:"unjudged"`
}

// Line describes the judgments in one sentence: "412 LLM judgments filled
// in (gpt-4o-mini; from j.jsonl), 37 pairs left to the human grade".
func (j *Judgments) Line() string {
	out := Count(j.Filled, "LLM judgment", "LLM judgments") + " filled in"
	var src []string
	if len(j.Models) > 0 {
		src = append(src, strings.Join(j.Models, ", "))
	}
	src = append(src, "from "+strings.Join(j.Files, ", "))
	out += " (" + strings.Join(src, "; ") + ")"
	if j.HumanWins > 0 {
		out += fmt.Sprintf(", %s kept the human grade", Count(j.HumanWins, "pair", "pairs"))
	}
	if j.UnknownQueries > 0 {
		out += fmt.Sprintf(", %s of queries the gold set lacks ignored", Count(j.UnknownQueries, "judgment", "judgments"))
	}
	return out
}

// CoverageLine says what the top k rests on: "top 10: 52.0% judged by
// humans, 41.0% by the LLM, 7.0% by nobody".
func (c Coverage) Line() string {
	return fmt.Sprintf("top %d: %.1f%% judged by humans, %.1f%% by the LLM, %.1f%% by nobody", c.Depth, 100*c.Human, 100*c.LLM, 100*c.Unjudged)
}

// writeFilled writes the filled-in evaluation's block of the terminal
// table: each measure with human judgments only and with LLM judgments.
func (s *Summary) writeFilled(b *strings.Builder) {
	j, f := s.Judgments, s.Filled
	fmt.Fprintf(b, "\nwith LLM judgments: %s\n", j.Line())
	for _, c := range j.Coverage {
		fmt.Fprintf(b, "  %s\n", c.Line())
	}
	if a := j.Agreement; a != nil {
		fmt.Fprintf(b, "  %s\n", a.Line())
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "measure\thuman\tLLM-filled\tdelta\n")
	for _, m := range s.Measures {
		fv, ok := f.Value(m.Name)
		if !ok {
			continue
		}
		fm := m
		fm.Value = fv
		delta := ""
		if m.Kind == "mean" {
			delta = Signed(fv - m.Value)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.Name, FormatValue(m), FormatValue(fm), delta)
	}
	tw.Flush()
}

// Agreement says how far LLM grades agree with human ones on the pairs
// both graded (re-judged pairs).
type Agreement struct {
	Pairs    int64 `json:"pairs"`
	MinGrade int   `json:"min_grade"`
	MaxGrade int   `json:"max_grade"`
	// Matrix[h][l] counts the pairs the human graded MinGrade+h and the
	// LLM MinGrade+l.
	Matrix [][]int64 `json:"confusion_matrix"`
	// Observed is the share of pairs with the same grade; Kappa is
	// Cohen's κ (unweighted) on the grade scale, KappaBinary at grade ≥
	// RelLevel; nil when not defined (Note says why).
	Observed    float64  `json:"observed"`
	Kappa       *float64 `json:"kappa,omitempty"`
	KappaBinary *float64 `json:"kappa_binary,omitempty"`
	RelLevel    int32    `json:"rel_level"`
	Note        string   `json:"note,omitempty"`
}

// Line states the agreement in one sentence.
func (a *Agreement) Line() string {
	k := func(x *float64) string {
		if x == nil {
			return "undefined"
		}
		return fmt.Sprintf("%.2f", *x)
	}
	return fmt.Sprintf("agreement with people on %s: same grade %.1f%%, Cohen's κ %s on the grade scale, %s at grade ≥ %d",
		Count(a.Pairs, "re-judged pair", "re-judged pairs"), 100*a.Observed, k(a.Kappa), k(a.KappaBinary), a.RelLevel)
}
