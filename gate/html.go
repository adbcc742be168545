package gate

import (
	"fmt"
	"html"
	"io"
	"math"
	"strconv"
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
.status-pass{color:#1a7f37;font-weight:600} .status-fail{color:#cf222e;font-weight:600} .status-warn{color:#9a6700;font-weight:600} .status-not_checked,.status-not-enough-queries{color:#57606a;font-weight:600}
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
		queries(s.Counts.ScoredQueries), html.EscapeString(s.Inputs.Gold.Path), html.EscapeString(s.Inputs.Run.Path), baselineNote(s, base))
	if n := s.JudgedOnlyNote(); n != "" {
		fmt.Fprintf(&b, "<p class=\"notes\">%s.</p>\n", html.EscapeString(upperFirst(n)))
	}
	if g := s.Gate; g != nil {
		fmt.Fprintf(&b, "<p class=\"verdict %s\" id=\"verdict\">%s</p>\n", g.Verdict, html.EscapeString(plainHeadline(g.Headline)))
		writeGateTable(&b, g)
		for _, n := range g.Notes {
			fmt.Fprintf(&b, "<p class=\"notes\">%s</p>\n", html.EscapeString(n))
		}
	}
	writeMeasureTable(&b, s, base)
	if m := focusMeasure(s); len(s.Groups) > 0 && m != "" {
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
	if lr := s.Retrieval; lr != nil {
		writeRetrieval(&b, lr, base)
	}
	if s.Judgments != nil && s.Filled != nil {
		writeFilled(&b, s)
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

func baselineNote(s *summary.Summary, base *baselineSource) string {
	if base == nil {
		return ""
	}
	note := ", compared with " + html.EscapeString(base.what)
	if s.Baseline != nil {
		note += " " + html.EscapeString(s.Baseline.ScoredOn())
	}
	return note
}

func writeGateTable(b *strings.Builder, g *summary.Gate) {
	b.WriteString("<h2>Gates</h2>\n<table id=\"gates\"><tr><th>gate</th><th>measure</th><th>value</th><th>baseline</th><th>change</th><th>95% CI</th><th>p</th><th>limit</th><th>if it fails</th><th>result</th></tr>\n")
	for _, r := range g.Gates {
		p := "–"
		if r.PValue != nil {
			p = summary.FormatP(*r.PValue)
		}
		fmt.Fprintf(b, "<tr><td>%s</td><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td>%s</td><td>%s</td><td class=\"status-%s\">%s</td></tr>\n",
			cells(r.Name, measureLabel(r), gateValue(r, r.Value), gateValue(r, r.Baseline), gateDelta(r),
				ciText(r), p, thresholdText(r), ifFails(r), r.Status, statusWord(r))...)
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
		fmt.Fprintf(b, "<tr><td>%s</td><td class=\"num\">%s</td>", cells(m.Name, fmtValue(m))...)
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
					p = summary.FormatP(*mc.PValue)
				}
			}
			if m.Kind == "mean" {
				fmt.Fprintf(b, "<td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td>", cells(pct(bv), points(m.Value-bv), ci, p)...)
			} else {
				fmt.Fprintf(b, "<td class=\"num\">%.0f</td><td></td><td></td><td></td>", bv)
			}
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}

// cells escapes the texts of table cells for HTML ("< 0.001" holds a <).
func cells(texts ...string) []any {
	out := make([]any, len(texts))
	for i, t := range texts {
		out[i] = html.EscapeString(t)
	}
	return out
}

func fmtValue(m summary.Measure) string {
	if m.Kind == "sum" {
		return fmt.Sprintf("%.0f", m.Value)
	}
	return pct(m.Value)
}

func trendMeasures(s *summary.Summary, c *Criteria) []string {
	var out []string
	if c != nil {
		for _, m := range c.Measures() {
			out = append(out, m.String())
		}
		return out
	}
	if m := focusMeasure(s); m != "" {
		return []string{m}
	}
	return nil
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

// writeRetrieval writes the live retrieval's section: its costs, the
// latency table overall and per tag, a latency histogram and the failed
// queries.
func writeRetrieval(b *strings.Builder, r *summary.Retrieval, base *baselineSource) {
	fmt.Fprintf(b, "<h2>Retrieval</h2>\n<p class=\"notes\">Retriever <code>%s</code>: %s.</p>\n",
		html.EscapeString(r.Retriever.Path), html.EscapeString(r.Line()))
	b.WriteString("<table id=\"latency\"><tr><th>latency (ms)</th><th>answered</th><th>failed</th><th>p50</th><th>p90</th><th>p95</th><th>p99</th><th>max</th><th>mean</th></tr>\n")
	row := func(name string, answered, failed int64, l summary.Latency) {
		fmt.Fprintf(b, "<tr><td>%s</td><td class=\"num\">%d</td><td class=\"num\">%d</td>", html.EscapeString(name), answered, failed)
		for _, x := range []float64{l.P50, l.P90, l.P95, l.P99, l.Max, l.Mean} {
			fmt.Fprintf(b, "<td class=\"num\">%.1f</td>", x)
		}
		b.WriteString("</tr>\n")
	}
	row("all queries", r.Answered, r.Failed, r.Latency)
	if base != nil && base.retrieval != nil {
		row("baseline", base.retrieval.Answered, base.retrieval.Failed, base.retrieval.Latency)
	}
	for _, g := range r.Groups {
		row(g.Tag+"="+g.Value, g.Answered, g.Failed, g.Latency)
	}
	b.WriteString("</table>\n")
	if len(r.Histogram) > 0 {
		b.WriteString(latencyHistogram(r.Histogram, r.Latency))
	}
	if len(r.FailedQueries) > 0 {
		b.WriteString("<h3>Failed queries</h3>\n<ul id=\"failed\">\n")
		for _, f := range r.FailedQueries {
			fmt.Fprintf(b, "<li><code>%s</code>: %s</li>\n", html.EscapeString(f.QueryID), html.EscapeString(f.Error))
		}
		b.WriteString("</ul>\n")
	}
}

// latencyHistogram draws the latency histogram: one bar per bin (bins
// grow by half each), with the p50 and p95 bins marked.
func latencyHistogram(bins []summary.LatencyBin, l summary.Latency) string {
	const width, height, left, bottom = 720, 180, 50, 40
	most := int64(1)
	for _, bin := range bins {
		most = max(most, bin.Count)
	}
	barW := float64(width-left) / float64(len(bins))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg id="latency-histogram" width="%d" height="%d" role="img" aria-label="latency histogram">`+"\n", width, height+bottom)
	fmt.Fprintf(&b, `<text class="title" x="%d" y="14">Queries by latency (ms)</text>`+"\n", left)
	lower := 0.0
	for i, bin := range bins {
		h := float64(height-30) * float64(bin.Count) / float64(most)
		x := float64(left) + float64(i)*barW
		color := colorRun
		if (l.P95 >= lower && l.P95 < bin.UpToMS) || (l.P50 >= lower && l.P50 < bin.UpToMS) {
			color = colorBaseline
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s–%s ms: %d</title></rect>`+"\n",
			x+1, float64(height)-h, max(barW-2, 1), h, color, trimFloat(lower), trimFloat(bin.UpToMS), bin.Count)
		if i%max(1, len(bins)/8) == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", x, height+14, trimFloat(bin.UpToMS))
		}
		lower = bin.UpToMS
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`+"\n", left, height, width, height, colorGrid)
	fmt.Fprintf(&b, `<text x="%d" y="%d">%d</text>`+"\n", 4, 30, most)
	b.WriteString("</svg>\n")
	fmt.Fprintf(&b, `<p class="legend"><span><span class="sw" style="background:%s"></span>queries</span><span><span class="sw" style="background:%s"></span>bins holding p50 and p95</span></p>`+"\n",
		colorRun, colorBaseline)
	return b.String()
}

// trimFloat prints a bin bound without trailing zeros.
func trimFloat(x float64) string { return strconv.FormatFloat(x, 'f', -1, 64) }

// writeFilled writes the measures with human judgments only and with LLM
// judgments filled in.
func writeFilled(b *strings.Builder, s *summary.Summary) {
	j := s.Judgments
	fmt.Fprintf(b, "<h2>With LLM judgments filled in</h2>\n<p class=\"notes\">%s.", html.EscapeString(j.Line()))
	for _, c := range j.Coverage {
		fmt.Fprintf(b, " %s.", html.EscapeString(upperFirst(c.Line())))
	}
	b.WriteString(" LLM labels agree with people less among close systems, where a gate decides.</p>\n")
	if a := j.Agreement; a != nil {
		writeAgreement(b, a)
	}
	b.WriteString("<table id=\"filled\"><tr><th>measure</th><th>human</th><th>LLM-filled</th><th>change</th></tr>\n")
	for _, m := range s.Measures {
		fv, ok := s.Filled.Value(m.Name)
		if !ok || m.Kind != "mean" {
			continue
		}
		fmt.Fprintf(b, "<tr><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td></tr>\n",
			html.EscapeString(m.Name), pct(m.Value), pct(fv), points(fv-m.Value))
	}
	b.WriteString("</table>\n")
}

// writeAgreement writes the agreement of re-judged pairs: the sentence and
// the confusion matrix.
func writeAgreement(b *strings.Builder, a *summary.Agreement) {
	fmt.Fprintf(b, "<p>%s.", html.EscapeString(upperFirst(a.Line())))
	if a.Note != "" {
		fmt.Fprintf(b, " (%s)", html.EscapeString(a.Note))
	}
	b.WriteString("</p>\n<table id=\"agreement\"><tr><th>human \\ LLM</th>")
	for g := a.MinGrade; g <= a.MaxGrade; g++ {
		fmt.Fprintf(b, "<th>%d</th>", g)
	}
	b.WriteString("</tr>\n")
	for h, row := range a.Matrix {
		fmt.Fprintf(b, "<tr><th>%d</th>", a.MinGrade+h)
		for _, n := range row {
			fmt.Fprintf(b, "<td class=\"num\">%d</td>", n)
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</table>\n")
}
