package gate

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/evalgate/evalgate/summary"
)

// richSummary has every part the report draws: tags, a baseline run, the
// recall curve, regressed queries and a gate verdict.
func richSummary(t *testing.T) (*summary.Summary, []*summary.Summary) {
	t.Helper()
	s := sum(0.812, 0.70, "g")
	s.Baseline = &summary.Baseline{Input: summary.Input{Path: "baseline.jsonl"}, Measures: sum(0.87, 0.72, "g").Measures,
		Groups: sum(0.87, 0.72, "g").Groups}
	lo, hi, p := -0.071, -0.046, 0.001
	s.Comparison = &summary.Comparison{Replicates: 1000, Permutations: 1000,
		Measures:         []summary.MeasureComparison{{Name: "R@5", Value: 0.812, Baseline: 0.87, Delta: -0.058, CILow: &lo, CIHigh: &hi, PValue: &p}},
		RegressedMeasure: "R@5",
		Regressed: []summary.RegressedQuery{{QueryID: "q17", Query: "how do I reset my <password>?", Value: 0, Baseline: 1, Rank: 0, BaselineRank: 1},
			{QueryID: "q3", Value: 0.5, Baseline: 1, Rank: 7, BaselineRank: 2}}}
	curve := &summary.Curve{}
	for k := 1; k <= 100; k++ {
		curve.Run = append(curve.Run, 1-1/float64(k+1))
		curve.Baseline = append(curve.Baseline, 0.8*(1-1/float64(k+2))) // below the run: both visible
	}
	s.RecallCurve = curve
	v, err := Evaluate(seed(t), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Gate = v
	var hist []*summary.Summary
	for i, r5 := range []float64{0.90, 0.88, 0.87, 0.86, 0.812} {
		h := sum(r5, 0.7, "g")
		h.Execution.StartedAt = fmt.Sprintf("2026-11-%02dT01:00:00Z", 18+i)
		hist = append(hist, h)
	}
	hist[len(hist)-1] = s
	return s, hist
}

func TestHTMLIsSelfContained(t *testing.T) {
	s, hist := richSummary(t)
	var b bytes.Buffer
	if err := WriteHTML(&b, Report{Summary: s, History: hist, Criteria: seed(t)}); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	// The only URL is the SVG namespace; nothing is fetched (and the CSP
	// forbids it anyway).
	if n, ns := strings.Count(page, "http"), strings.Count(page, `xmlns="http://www.w3.org/2000/svg"`); n != ns+1 {
		t.Fatalf("page references %d URLs beyond the SVG namespace", n-ns)
	}
	if !strings.Contains(page, "default-src 'none'") || strings.Contains(page, "<script") {
		t.Fatal("the page must forbid network loads and carry no script")
	}
	if !strings.Contains(page, "how do I reset my &lt;password&gt;?") {
		t.Fatal("query text is not escaped")
	}
}

// Every output writes a change in one unit ("points", not also "pts")
// and a negative number with one sign (−, never also -).
func TestOneUnitOneMinusSign(t *testing.T) {
	s, hist := richSummary(t)
	var tb, cb, jb, hb, trb bytes.Buffer
	_ = WriteTable(&tb, s.Gate)
	_ = WriteComment(&cb, Report{Summary: s})
	_ = WriteJUnit(&jb, s)
	_ = WriteHTML(&hb, Report{Summary: s, History: hist, Criteria: seed(t)})
	_ = WriteTrends(&trb, Trends(hist, seed(t), 3), nil)
	// The charts' coordinates and the style sheet are no text to read.
	page := regexp.MustCompile(`(?s)<svg .*?</svg>|<style>.*?</style>`).ReplaceAllString(hb.String(), "")
	hyphenMinus := regexp.MustCompile(`(^|[^\w.])-\d`)
	for what, out := range map[string]string{"table": tb.String(), "comment": cb.String(), "junit": jb.String(), "html": page, "trends": trb.String()} {
		if strings.Contains(out, "pts") {
			t.Errorf("%s writes both \"points\" and \"pts\":\n%s", what, out)
		}
		if m := hyphenMinus.FindString(out); m != "" {
			t.Errorf("%s writes a negative number with a hyphen (%q):\n%s", what, m, out)
		}
		if !strings.Contains(out, "−") {
			t.Errorf("%s has no negative change to check:\n%s", what, out)
		}
	}
	if !strings.Contains(tb.String(), "−5.8 points  [−7.1, −4.6] points") {
		t.Errorf("table change and interval:\n%s", tb.String())
	}
	if !strings.Contains(page, "[−7.1, −4.6] points") {
		t.Errorf("html interval:\n%s", page)
	}
}

func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// chromiumRunner returns a function running headless Chromium with a
// profile under dir and returning its standard output.
func chromiumRunner(t *testing.T, chromium, dir string) func(args ...string) []byte {
	t.Helper()
	return func(args ...string) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
			"--user-data-dir=" + filepath.Join(dir, "profile"), "--hide-scrollbars"}
		cmd := exec.CommandContext(ctx, chromium, append(base, args...)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
		}
		return out.Bytes()
	}
}

// TestHTMLRendersInChromium loads report.html in headless Chromium, checks
// the rendered DOM holds the gate table and the charts, and checks the
// screenshot actually shows the run's and the baseline's curves.
func TestHTMLRendersInChromium(t *testing.T) {
	chromium := findChromium()
	if chromium == "" {
		t.Skip("chromium is not installed (apt-get install chromium); CI installs it and runs this test")
	}
	s, hist := richSummary(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var b bytes.Buffer
	if err := WriteHTML(&b, Report{Summary: s, History: hist, Criteria: seed(t)}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	run := chromiumRunner(t, chromium, dir)
	dom := string(run("--dump-dom", "file://"+page))
	for _, want := range []string{`<table id="gates">`, `id="tag-chart"`, `id="recall-curve"`, `id="trend-R-5"`, `class="verdict fail"`,
		"Blocked: retrieval recall@5", `class="series-1"`, `class="floor"`, `<table id="regressed">`} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered DOM lacks %q", want)
		}
	}
	// Each chart of the report, cut out and drawn alone at a known place:
	// the pixels of a series' colour in a chart's region can then come
	// only from that chart (not from legend swatches or the red FAIL
	// text elsewhere on the page).
	charts := regexp.MustCompile(`(?s)<svg [^>]*id="([^"]+)".*?</svg>`).FindAllStringSubmatch(b.String(), -1)
	const slot = 400 // px per chart; every chart is shorter
	var lay strings.Builder
	lay.WriteString("<!DOCTYPE html><html><head><meta charset=\"utf-8\"><style>body{margin:0;background:#fff}</style></head><body>")
	for i, c := range charts {
		fmt.Fprintf(&lay, `<div style="position:absolute;left:0;top:%dpx">%s</div>`, i*slot, c[0])
	}
	lay.WriteString("</body></html>")
	layout := filepath.Join(dir, "charts.html")
	if err := os.WriteFile(layout, []byte(lay.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "charts.png")
	run("--screenshot="+shot, fmt.Sprintf("--window-size=900,%d", len(charts)*slot), "file://"+layout)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	near := func(r, g, b, r2, g2, b2 uint32) bool {
		d := func(a, b uint32) uint32 {
			if a > b {
				return a - b
			}
			return b - a
		}
		return d(r, r2) < 24 && d(g, g2) < 24 && d(b, b2) < 24
	}
	type counts struct{ run, base, floor int }
	count := func(region int) counts {
		var c counts
		bounds := img.Bounds()
		for y := max(bounds.Min.Y, region*slot); y < min(bounds.Max.Y, (region+1)*slot); y++ {
			for x := bounds.Min.X; x < bounds.Max.X; x++ {
				r, g, b, _ := img.At(x, y).RGBA()
				r, g, b = r>>8, g>>8, b>>8
				switch {
				case near(r, g, b, 0x1f, 0x6f, 0xeb):
					c.run++
				case near(r, g, b, 0x9a, 0x67, 0x00):
					c.base++
				case near(r, g, b, 0xcf, 0x22, 0x2e):
					c.floor++
				}
			}
		}
		return c
	}
	// What each chart must show, in pixels: a 700-pixel-wide line of 2
	// pixels gives about 1000 (less where another line crosses it), five
	// point markers alone under 200; a bar of the tag chart over 4000.
	want := map[string]counts{
		"tag-chart":    {run: 4000, base: 4000},
		"recall-curve": {run: 600, base: 600},
		"trend-R-5":    {run: 600, floor: 300},
		"trend-RR":     {run: 600, floor: 300},
	}
	seen := 0
	for i, c := range charts {
		w, ok := want[c[1]]
		if !ok {
			continue
		}
		seen++
		got := count(i)
		if got.run < w.run || got.base < w.base || got.floor < w.floor {
			t.Errorf("chart %s shows %d run, %d baseline and %d floor pixels; want at least %d, %d and %d",
				c[1], got.run, got.base, got.floor, w.run, w.base, w.floor)
		}
		t.Logf("chart %s: %d run, %d baseline, %d floor pixels", c[1], got.run, got.base, got.floor)
	}
	if seen != len(want) {
		t.Fatalf("the report has %d of the %d charts checked", seen, len(want))
	}
}

// A p-value below 0.001 reads "< 0.001" in every output, and the "<" is
// escaped in the HTML cells that hold it.
func TestPValuesOneWayEverywhere(t *testing.T) {
	s, _ := richSummary(t)
	tiny := 0.0002
	s.Comparison.Measures[0].PValue = &tiny
	v, err := Evaluate(seed(t), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Gate = v
	var tb, cb, hb, sb bytes.Buffer
	_ = WriteTable(&tb, s.Gate)
	_ = WriteComment(&cb, Report{Summary: s})
	_ = WriteHTML(&hb, Report{Summary: s})
	_ = s.WriteTable(&sb)
	// The comment is Markdown, where "&lt;" shows as "<".
	for what, out := range map[string]string{"gate table": tb.String(), "summary table": sb.String(),
		"comment": strings.ReplaceAll(cb.String(), "&lt;", "<")} {
		if !strings.Contains(out, "< 0.001") || strings.Contains(out, "0.000 ") || strings.Contains(out, "0.000\n") {
			t.Errorf("%s does not write the p-value as < 0.001:\n%s", what, out)
		}
	}
	h := hb.String()
	if !strings.Contains(h, `<td class="num">&lt; 0.001</td>`) || strings.Contains(h, "< 0.001") {
		t.Errorf("html cells hold an unescaped <:\n%s", h)
	}
}

// The comment's tag breakdown is about the measure of the gate that fails,
// not the first gate's.
func TestCommentTagsFollowFailingGate(t *testing.T) {
	c, err := ParseCriteria("c.yaml", []byte("gates:\n  - name: retrieval_recall_at_5\n    threshold: 0.5\n  - name: retrieval_mrr\n    threshold: 0.9\n"))
	if err != nil {
		t.Fatal(err)
	}
	run, base := sum(0.874, 0.70, "g"), sum(0.870, 0.71, "g")
	v, err := Evaluate(c, run, Options{Baseline: base})
	if err != nil || v.Gates[1].Status != StatusFail {
		t.Fatalf("%v %+v", err, v)
	}
	run.Gate = v
	var cb, hb bytes.Buffer
	_ = WriteComment(&cb, Report{Summary: run, Baseline: base})
	_ = WriteHTML(&hb, Report{Summary: run, Baseline: base})
	if !strings.Contains(cb.String(), "**Where MRR moved most** (by tag)") {
		t.Errorf("comment singles out another measure:\n%s", cb.String())
	}
	if !strings.Contains(hb.String(), "<h2>MRR per tag</h2>") {
		t.Errorf("html singles out another measure")
	}
}

// Query ids go into the comment's code spans as they are: GitHub does not
// decode entities there, so "&lt;" would show literally; a backtick in
// the id gets a longer fence and a pipe is escaped for the table.
func TestCommentCodeSpans(t *testing.T) {
	s, _ := richSummary(t)
	s.Comparison.Regressed[0].QueryID = "a<b>&c"
	s.Comparison.Regressed[1].QueryID = "x`y|z"
	var cb bytes.Buffer
	_ = WriteComment(&cb, Report{Summary: s})
	for _, want := range []string{"| `a<b>&c` |", "| ``x`y\\|z`` |"} {
		if !strings.Contains(cb.String(), want) {
			t.Errorf("comment lacks %s:\n%s", want, cb.String())
		}
	}
	if strings.Contains(cb.String(), "&lt;b") {
		t.Errorf("query id escaped inside a code span:\n%s", cb.String())
	}
}

// Without criteria the comment and JUnit still say what was measured:
// every measure (against the baseline when there is one), the tag table,
// one passing JUnit test case per mean measure.
func TestReportsWithoutCriteria(t *testing.T) {
	s, _ := richSummary(t)
	s.Gate = nil
	var cb, jb bytes.Buffer
	if err := WriteComment(&cb, Report{Summary: s}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### evalgate: 500 queries scored", "| recall@5 `R@5` | 81.2% | 87.0% | −5.8 points | [−7.1, −4.6] points | 0.001 |",
		"**Where recall@5 moved most** (by tag)", "**Most regressed queries**"} {
		if !strings.Contains(cb.String(), want) {
			t.Errorf("comment lacks %q:\n%s", want, cb.String())
		}
	}
	if err := WriteJUnit(&jb, s); err != nil {
		t.Fatal(err)
	}
	j := jb.String()
	if !strings.Contains(j, `<testsuite name="evalgate measures" tests="2" failures="0" skipped="0">`) ||
		!strings.Contains(j, `<testcase name="R@5" classname="evalgate.measure">`) || !strings.Contains(j, "R@5 = 81.2% over 500 queries (baseline 87.0%, change −5.8 points)") {
		t.Errorf("junit:\n%s", j)
	}
	// Without a baseline: the values, and the tags where the first measure
	// is lowest.
	plain := sum(0.874, 0.70, "g")
	plain.Groups[0].Measures = []summary.Measure{{Name: "R@5", Value: 0.5, Kind: "mean"}}
	cb.Reset()
	_ = WriteComment(&cb, Report{Summary: plain})
	for _, want := range []string{"| measure | value |", "| recall@5 `R@5` | 87.4% |", "**recall@5 by tag** (lowest first)", "| category=legal | 12 | 50.0% |"} {
		if !strings.Contains(cb.String(), want) {
			t.Errorf("comment lacks %q:\n%s", want, cb.String())
		}
	}
}

// TestLiveReportRendersInChromium renders the sections a live retrieval
// and LLM-filled judgments add: the latency table and histogram, the
// failed queries, the filled measures and the agreement matrix; the
// histogram's bars must show in the screenshot.
func TestLiveReportRendersInChromium(t *testing.T) {
	chromium := findChromium()
	if chromium == "" {
		t.Skip("chromium is not installed (apt-get install chromium); CI installs it and runs this test")
	}
	s := withRetrieval(sum(0.812, 0.70, "g"), 230, 380, 1)
	s.Retrieval.FailedQueries = []summary.FailedQuery{{QueryID: "q<9>", Error: "HTTP 503 after 4 attempts"}}
	s.Retrieval.Histogram = []summary.LatencyBin{{UpToMS: 50, Count: 40}, {UpToMS: 75, Count: 160}, {UpToMS: 112.5, Count: 220},
		{UpToMS: 168.75, Count: 50}, {UpToMS: 253.125, Count: 20}, {UpToMS: 379.6875, Count: 9}}
	kappa := 0.61
	s.Judgments = &summary.Judgments{Files: []string{"judgments.jsonl"}, Judgments: 120, Filled: 100, HumanWins: 20, Rejudged: 20,
		Models: []string{"judge-model"},
		Agreement: &summary.Agreement{Pairs: 20, MinGrade: 0, MaxGrade: 1, Matrix: [][]int64{{8, 2}, {2, 8}}, Observed: 0.8,
			Kappa: &kappa, KappaBinary: &kappa, RelLevel: 1}}
	s.Filled = sum(0.851, 0.73, "g")
	dir := t.TempDir()
	var b bytes.Buffer
	if err := WriteHTML(&b, Report{Summary: s}); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	run := chromiumRunner(t, chromium, dir)
	dom := string(run("--dump-dom", "file://"+page))
	for _, want := range []string{`<table id="latency">`, `id="latency-histogram"`, "category=legal", `<ul id="failed">`,
		"q&lt;9&gt;", `<table id="filled">`, "85.1%", `<table id="agreement">`, "Cohen's κ 0.61"} {
		if !strings.Contains(dom, want) {
			t.Errorf("rendered DOM lacks %q", want)
		}
	}
	svg := regexp.MustCompile(`(?s)<svg id="latency-histogram".*?</svg>`).FindString(b.String())
	if svg == "" {
		t.Fatal("the report has no latency histogram")
	}
	layout := filepath.Join(dir, "histogram.html")
	if err := os.WriteFile(layout, []byte(`<!DOCTYPE html><html><head><meta charset="utf-8"><style>body{margin:0;background:#fff}</style></head><body>`+svg+`</body></html>`), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "histogram.png")
	run("--screenshot="+shot, "--window-size=800,300", "file://"+layout)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	// The bins holding p50 (80 ms) and p95 (230 ms) are drawn in the
	// baseline's colour, the others in the run's: each colour must cover
	// bars, not a few stray pixels.
	var queries, marked int
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			switch [3]uint32{r >> 8, g >> 8, bl >> 8} {
			case [3]uint32{0x1f, 0x6f, 0xeb}:
				queries++
			case [3]uint32{0x9a, 0x67, 0x00}:
				marked++
			}
		}
	}
	t.Logf("histogram: %d query-bar pixels, %d marked-bin pixels", queries, marked)
	if queries < 3000 || marked < 3000 {
		t.Errorf("histogram shows %d query-bar and %d marked-bin pixels; want at least 3000 of each", queries, marked)
	}
}
