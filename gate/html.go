package gate

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"github.com/evalgate/evalgate/summary"
)

// The report is one self-contained HTML file: inline CSS, inline SVG, no
// script, and a content security policy that forbids every network load,
// so it renders the same from a CI artifact, a mail attachment or a file
// share.

const (
	colorRun      = "#1f6feb"
	colorBaseline = "#9a6700"
	colorFloor    = "#cf222e"
	colorGrid     = "#d0d7de"
)

const htmlHead = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s</title>
<style>
body{font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;color:#1f2328;padding:0 1em}
h1{font-size:1.4em} h2{font-size:1.15em;margin-top:2em}
.verdict{padding:.8em 1em;border-radius:6px;font-size:1.1em}
.pass{background:#dafbe1} .warn{background:#fff8c5} .fail{background:#ffebe9}
table{border-collapse:collapse;margin:.5em 0} td,th{border:1px solid #d0d7de;padding:.3em .6em;text-align:left;font-variant-numeric:tabular-nums}
th{background:#f6f8fa} td.num{text-align:right}
.status-pass{color:#1a7f37;font-weight:600} .status-fail{color:#cf222e;font-weight:600} .status-warn{color:#9a6700;font-weight:600}
.legend span{display:inline-block;margin-right:1.5em} .sw{display:inline-block;width:1em;height:.6em;margin-right:.4em;vertical-align:middle}
svg text{font-size:11px;fill:#57606a} svg .title{font-size:13px;fill:#1f2328}
.notes{color:#57606a}
</style></head><body>
`

// Report holds what the reports show.
type Report struct {
	Summary *summary.Summary
	// Baseline is the saved summary Summary was gated against
	// (--baseline), if any; a baseline run scored in the same job is
	// part of Summary.
	Baseline *summary.Summary
	// History, oldest first, ending with Summary (may be empty).
	History  []*summary.Summary
	Criteria *Criteria
}

// WriteHTML writes the self-contained report.
func WriteHTML(w io.Writer, r Report) error {
	s := r.Summary
	base := reportBaseline(s, r.Baseline)
	var b strings.Builder
	title := "evalgate report"
	if s.Gate != nil {
		title += " — " + strings.ToUpper(s.Gate.Verdict)
	}
	fmt.Fprintf(&b, htmlHead, html.EscapeString(title))
	fmt.Fprintf(&b, "<h1>%s</h1>\n", html.EscapeString(title))
	fmt.Fprintf(&b, "<p class=\"notes\">%s scored. Gold set <code>%s</code>, run <code>%s</code>%s.</p>\n",
		queries(s.Counts.ScoredQueries), html.EscapeString(s.Inputs.Gold.Path), html.EscapeString(s.Inputs.Run.Path), baselineNote(base))
	if g := s.Gate; g != nil {
		fmt.Fprintf(&b, "<p class=\"verdict %s\" id=\"verdict\">%s</p>\n", g.Verdict, html.EscapeString(plainHeadline(g.Headline)))
		writeGateTable(&b, g)
		for _, n := range g.Notes {
			fmt.Fprintf(&b, "<p class=\"notes\">%s</p>\n", html.EscapeString(n))
		}
	}
	writeMeasureTable(&b, s, base)
	if len(s.Groups) > 0 {
		m := primaryMeasure(s)
		fmt.Fprintf(&b, "<h2>%s per tag</h2>\n", html.EscapeString(Humanize(m)))
		b.WriteString(legend(base != nil, false))
		b.WriteString(tagChart(s, base, m))
	}
	if c := s.RecallCurve; c != nil && len(c.Run) > 0 {
		var bc []float64
		if base != nil {
			bc = base.curve[:min(len(base.curve), len(c.Run))]
		}
		fmt.Fprintf(&b, "<h2>Recall@k, k = 1…%d</h2>\n", len(c.Run))
		b.WriteString(legend(len(bc) > 0, false))
		b.WriteString(curveChart(c.Run, bc))
	}
	if len(r.History) > 1 {
		b.WriteString("<h2>Trend</h2>\n")
		b.WriteString(legend(false, true))
		for _, m := range trendMeasures(s, r.Criteria) {
			b.WriteString(trendChart(r.History, m, floorOf(r.Criteria, m)))
		}
	}
	if c := s.Comparison; c != nil && len(c.Regressed) > 0 {
		fmt.Fprintf(&b, "<h2>Most regressed queries (%s)</h2>\n<table id=\"regressed\"><tr><th>query</th><th>text</th><th>baseline</th><th>run</th><th>first relevant rank, baseline → run</th></tr>\n", html.EscapeString(Humanize(c.RegressedMeasure)))
		for _, q := range c.Regressed {
			fmt.Fprintf(&b, "<tr><td><code>%s</code></td><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s → %s</td></tr>\n",
				html.EscapeString(q.QueryID), html.EscapeString(q.Query), pct(q.Baseline), pct(q.Value), rankText(q.BaselineRank), rankText(q.Rank))
		}
		b.WriteString("</table>\n")
	}
	if len(s.Warnings) > 0 {
		b.WriteString("<h2>Warnings</h2>\n<ul>\n")
		for _, x := range s.Warnings {
			fmt.Fprintf(&b, "<li>%s</li>\n", html.EscapeString(x))
		}
		b.WriteString("</ul>\n")
	}
	b.WriteString("</body></html>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func baselineNote(base *baselineSource) string {
	if base == nil {
		return ""
	}
	return ", compared with " + html.EscapeString(base.what)
}

func writeGateTable(b *strings.Builder, g *summary.Gate) {
	b.WriteString("<h2>Gates</h2>\n<table id=\"gates\"><tr><th>gate</th><th>measure</th><th>value</th><th>baseline</th><th>change</th><th>95% CI</th><th>p</th><th>limit</th><th>if it fails</th><th>result</th></tr>\n")
	for _, r := range g.Gates {
		p := "–"
		if r.PValue != nil {
			p = pfmt(*r.PValue)
		}
		fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td>%s</td><td>%s</td><td class=\"status-%s\">%s</td></tr>\n",
			html.EscapeString(r.Name), html.EscapeString(r.Measure+tagSuffix(r.Tag)), optPct(r.Value), optPct(r.Baseline), optPoints(r.Delta),
			ciText(r), p, html.EscapeString(thresholdText(r)), html.EscapeString(ifFails(r)), r.Status, statusWord(r))
	}
	b.WriteString("</table>\n")
	for _, r := range g.Gates {
		for _, why := range r.Reasons {
			fmt.Fprintf(b, "<p class=\"notes\"><b>%s</b>: %s</p>\n", html.EscapeString(r.Name), html.EscapeString(why))
		}
	}
}

func writeMeasureTable(b *strings.Builder, s *summary.Summary, base *baselineSource) {
	b.WriteString("<h2>All measures</h2>\n<table id=\"measures\"><tr><th>measure</th><th>value</th>")
	if base != nil {
		b.WriteString("<th>baseline</th><th>change</th><th>95% CI</th><th>p</th>")
	}
	b.WriteString("</tr>\n")
	for _, m := range s.Measures {
		fmt.Fprintf(b, "<tr><td>%s</td><td class=\"num\">%s</td>", html.EscapeString(m.Name), fmtValue(m))
		if base != nil {
			bv, found := base.overall(m.Name)
			if !found {
				b.WriteString("<td>–</td><td></td><td></td><td></td></tr>\n")
				continue
			}
			ci, p := "–", "–"
			if mc := s.Comparison.Measure(m.Name); mc != nil {
				ci = ciRange(mc.CILow, mc.CIHigh)
				if mc.PValue != nil {
					p = pfmt(*mc.PValue)
				}
			}
			if m.Kind == "mean" {
				fmt.Fprintf(b, "<td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td>", pct(bv), points(m.Value-bv), ci, p)
			} else {
				fmt.Fprintf(b, "<td class=\"num\">%.0f</td><td></td><td></td><td></td>", bv)
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}

func fmtValue(m summary.Measure) string {
	if m.Kind == "sum" {
		return fmt.Sprintf("%.0f", m.Value)
	}
	return pct(m.Value)
}

// primaryMeasure is the first gated measure, or the first mean measure.
func primaryMeasure(s *summary.Summary) string {
	if s.Gate != nil && len(s.Gate.Gates) > 0 {
		return s.Gate.Gates[0].Measure
	}
	for _, m := range s.Measures {
		if m.Kind == "mean" {
			return m.Name
		}
	}
	return s.Measures[0].Name
}

func trendMeasures(s *summary.Summary, c *Criteria) []string {
	var out []string
	if c != nil {
		for _, m := range c.Measures() {
			out = append(out, m.String())
		}
		return out
	}
	return []string{primaryMeasure(s)}
}

func floorOf(c *Criteria, m string) *float64 {
	if c == nil {
		return nil
	}
	for _, g := range c.Gates {
		if g.Tag == "" && g.Threshold != nil && g.Measure.String() == m {
			return g.Threshold
		}
	}
	return nil
}

func legend(baseline, floor bool) string {
	var b strings.Builder
	b.WriteString("<p class=\"legend\">")
	fmt.Fprintf(&b, "<span><i class=\"sw\" style=\"background:%s\"></i>run</span>", colorRun)
	if baseline {
		fmt.Fprintf(&b, "<span><i class=\"sw\" style=\"background:%s\"></i>baseline</span>", colorBaseline)
	}
	if floor {
		fmt.Fprintf(&b, "<span><i class=\"sw\" style=\"background:%s\"></i>floor (gate threshold)</span>", colorFloor)
	}
	b.WriteString("</p>\n")
	return b.String()
}

// tagChart draws horizontal bars of a measure per tag group (and the
// baseline's, when there is one).
func tagChart(s *summary.Summary, base *baselineSource, m string) string {
	const left, width, barH, gap = 180, 560, 12, 10
	groups := s.Groups
	rowH := barH + gap
	if base != nil {
		rowH += barH
	}
	height := len(groups)*rowH + 40
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="tag-chart" width="%d" height="%d" role="img" aria-label="%s per tag">`+"\n",
		left+width+80, height, html.EscapeString(m))
	for i := 0; i <= 4; i++ {
		x := left + width*i/4
		fmt.Fprintf(&b, `<line x1="%d" y1="10" x2="%d" y2="%d" stroke="%s"/><text x="%d" y="%d" text-anchor="middle">%d%%</text>`+"\n",
			x, x, height-25, colorGrid, x, height-10, 25*i)
	}
	for i, g := range groups {
		tag := g.Tag + "=" + g.Value
		y := 15 + i*rowH
		v, n, _ := s.GroupValue(tag, m)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s (%d)</text>`+"\n", left-6, y+barH-2, html.EscapeString(tag), n)
		fmt.Fprintf(&b, `<rect class="bar-run" x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s: %s</title></rect>`+"\n",
			left, y, float64(width)*clamp01(v), barH, colorRun, html.EscapeString(tag), pct(v))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", float64(left)+float64(width)*clamp01(v)+4, y+barH-2, pct(v))
		if base != nil {
			bv, _, _ := base.group(tag, m)
			fmt.Fprintf(&b, `<rect class="bar-baseline" x="%d" y="%d" width="%.1f" height="%d" fill="%s"><title>%s baseline: %s</title></rect>`+"\n",
				left, y+barH, float64(width)*clamp01(bv), barH, colorBaseline, html.EscapeString(tag), pct(bv))
		}
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func clamp01(x float64) float64 {
	if math.IsNaN(x) {
		return 0
	}
	return math.Max(0, math.Min(1, x))
}

// lineChart draws series over x = 1..n with y in [0,1] and an optional
// horizontal floor line.
func lineChart(id, label string, series [][]float64, colors []string, floor *float64, xlabels func(i int) string) string {
	const left, top, width, height = 50, 15, 700, 260
	n := 0
	for _, s := range series {
		n = max(n, len(s))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="%s" width="%d" height="%d" role="img" aria-label="%s">`+"\n",
		id, left+width+20, top+height+40, html.EscapeString(label))
	fmt.Fprintf(&b, `<text class="title" x="%d" y="12">%s</text>`+"\n", left, html.EscapeString(label))
	for i := 0; i <= 4; i++ {
		y := top + height - height*i/4
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/><text x="%d" y="%d" text-anchor="end">%d%%</text>`+"\n",
			left, y, left+width, y, colorGrid, left-4, y+4, 25*i)
	}
	xAt := func(i int) float64 {
		if n <= 1 {
			return left + width/2
		}
		return float64(left) + float64(width)*float64(i)/float64(n-1)
	}
	yAt := func(v float64) float64 { return float64(top+height) - float64(height)*clamp01(v) }
	ticks := min(n, 10)
	for t := 0; t < ticks; t++ {
		i := t * (n - 1) / max(ticks-1, 1)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", xAt(i), top+height+16, html.EscapeString(xlabels(i)))
	}
	// The first series (the run) is drawn last, on top: where the run and
	// the baseline coincide the reader sees the run.
	for si := len(series) - 1; si >= 0; si-- {
		s := series[si]
		var pts []string
		for i, v := range s {
			if math.IsNaN(v) {
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xAt(i), yAt(v)))
		}
		if len(pts) == 0 {
			continue
		}
		fmt.Fprintf(&b, `<polyline class="series-%d" fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", si, colors[si], strings.Join(pts, " "))
		if len(pts) < 40 {
			for _, p := range pts {
				xy := strings.Split(p, ",")
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`, xy[0], xy[1], colors[si])
			}
			b.WriteString("\n")
		}
	}
	if floor != nil {
		// On top of the series, dashed so they show through, and on whole
		// pixels (2 wide) so the threshold is crisp, not smeared over
		// three rows by anti-aliasing.
		y := math.Round(yAt(*floor))
		fmt.Fprintf(&b, `<line class="floor" x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="%s" stroke-dasharray="6 4" stroke-width="2"/>`+"\n",
			left, y, left+width, y, colorFloor)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func curveChart(run, baseline []float64) string {
	series, colors := [][]float64{run}, []string{colorRun}
	if len(baseline) > 0 {
		series, colors = append(series, baseline), append(colors, colorBaseline)
	}
	return lineChart("recall-curve", "recall@k", series, colors, nil, func(i int) string { return fmt.Sprint(i + 1) })
}

func trendChart(history []*summary.Summary, m string, floor *float64) string {
	vals := make([]float64, len(history))
	for i, s := range history {
		v, ok := s.Value(m)
		if !ok {
			v = math.NaN()
		}
		vals[i] = v
	}
	label := func(i int) string {
		t := history[i].Execution.StartedAt
		if len(t) >= 10 {
			return t[5:10]
		}
		return fmt.Sprint(i + 1)
	}
	return lineChart("trend-"+strings.NewReplacer("@", "-", "(", "", ")", "", "=", "").Replace(m), Humanize(m)+" over runs",
		[][]float64{vals}, []string{colorRun}, floor, label)
}

// plainHeadline drops the leading emoji of a headline: the report shows the
// verdict by colour, and not every machine has an emoji font.
func plainHeadline(h string) string {
	for _, mark := range []string{"❌ ", "⚠️ ", "✅ "} {
		if rest, ok := strings.CutPrefix(h, mark); ok {
			return rest
		}
	}
	return h
}
