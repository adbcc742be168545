package gate

import (
	"bytes"
	"strings"
	"testing"

	"github.com/evalgate/evalgate/summary"
)

const costCriteria = `gates:
  - name: retrieval_recall_at_5
    threshold: 0.85
  - name: latency_p95_ms
    threshold: 250        # a ceiling, in milliseconds
    regression_max: 40    # the largest rise over the baseline
  - name: legal_latency
    metric: latency_p99_ms
    tag: category=legal
    threshold: 400
    severity: warning
  - name: failed_queries
    threshold: 0
`

// withRetrieval adds a live retrieval's latencies to a summary.
func withRetrieval(s *summary.Summary, p95, legalP99 float64, failed int64) *summary.Summary {
	s.Retrieval = &summary.Retrieval{Retriever: summary.Input{Path: "search.yaml"}, K: 100, Queries: 500, Answered: 500 - failed,
		Failed: failed, Requests: 510, Retries: 10,
		Latency: summary.Latency{P50: 80, P90: 150, P95: p95, P99: 300, Max: 900, Mean: 95},
		Groups: []summary.GroupLatency{{Tag: "category", Value: "legal", Answered: 12, Latency: summary.Latency{P95: 350, P99: legalP99}},
			{Tag: "category", Value: "policy", Answered: 300, Latency: summary.Latency{P95: 120, P99: 200}}}}
	return s
}

func TestCostCriteria(t *testing.T) {
	c, err := ParseCriteria("c.yaml", []byte(costCriteria))
	if err != nil {
		t.Fatal(err)
	}
	if g := c.Gates[1]; g.Cost != "latency_p95_ms" || *g.Threshold != 250 || *g.RegressionMax != 40 {
		t.Fatalf("latency gate %+v", g)
	}
	if g := c.Gates[2]; g.Cost != "latency_p99_ms" || g.Tag != "category=legal" {
		t.Fatalf("tagged latency gate %+v", g)
	}
	if ms := c.Measures(); len(ms) != 1 || ms[0].String() != "R@5" {
		t.Fatalf("measures %v: a cost gate adds no measure", ms)
	}
	if tags := c.Tags(); len(tags) != 0 {
		t.Fatalf("tags %v: a cost gate needs no paired tag group", tags)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"gates:\n  - name: latency_p95_ms\n    threshold: -1\n", "c.yaml:3"},
		{"gates:\n  - name: latency_p95_ms\n    threshold: 100\n    significant: true\n", "significant"},
		{"gates:\n  - name: recall_at_5\n    metric: R@5\n    threshold: 250\n", "outside [0,1]"},
	} {
		if _, err := ParseCriteria("c.yaml", []byte(bad.yaml)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error with %q", bad.yaml, err, bad.want)
		}
	}
}

func TestCostGates(t *testing.T) {
	c, err := ParseCriteria("c.yaml", []byte(costCriteria))
	if err != nil {
		t.Fatal(err)
	}
	status := func(v *summary.Gate) []string {
		var out []string
		for _, r := range v.Gates {
			out = append(out, r.Status)
		}
		return out
	}
	// Within every ceiling, against a saved live baseline.
	v, err := Evaluate(c, withRetrieval(sum(0.9, 0.7, "g"), 230, 380, 0), Options{Baseline: withRetrieval(sum(0.9, 0.7, "g"), 210, 380, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(status(v), ","); got != "pass,pass,pass,pass" || v.Gates[1].Unit != UnitMS || *v.Gates[1].Delta != 20 {
		t.Fatalf("statuses %s, latency gate %+v", got, v.Gates[1])
	}
	// Above the ceiling, a rise beyond the limit, a tag group over its
	// ceiling (a warning) and a failed query.
	v, err = Evaluate(c, withRetrieval(sum(0.9, 0.7, "g"), 260, 450, 1), Options{Baseline: withRetrieval(sum(0.9, 0.7, "g"), 200, 380, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(status(v), ","); got != "pass,fail,warn,fail" || v.Verdict != VerdictFail {
		t.Fatalf("statuses %s verdict %s", got, v.Verdict)
	}
	for _, want := range []string{
		"retrieval latency p95 is 260.0 ms, above the ceiling of 250.0 ms",
		"retrieval latency p95 rose from 200.0 ms to 260.0 ms (+60.0 ms, more than the 40.0 ms allowed)",
	} {
		if !strings.Contains(strings.Join(v.Gates[1].Reasons, "\n"), want) {
			t.Errorf("reasons %q lack %q", v.Gates[1].Reasons, want)
		}
	}
	if r := v.Gates[3].Reasons[0]; r != "1 query got no answer from the retriever, more than the 0 allowed" {
		t.Errorf("failed queries reason %q", r)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, v); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"260.0 ms", "200.0 ms", "+60.0 ms", "≤ 250.0 ms, rise ≤ 40.0 ms", "≤ 0 queries"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	// A run file scored without a retriever has no latency: not checked,
	// never a pass; a baseline run (no latency either) checks the
	// ceilings but not the rises.
	v, err = Evaluate(c, sum(0.9, 0.7, "g"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(status(v), ","); got != "pass,not_checked,not_checked,not_checked" ||
		!strings.Contains(v.Gates[1].Reasons[0], "only when the run comes from a retriever") {
		t.Fatalf("statuses %s, reasons %q", got, v.Gates[1].Reasons)
	}
	live := withRetrieval(sum(0.9, 0.7, "g"), 230, 380, 0)
	live.Baseline = &summary.Baseline{Input: summary.Input{Path: "prod.trec"}, Measures: live.Measures, Groups: live.Groups}
	v, err = Evaluate(c, live, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r := v.Gates[1]; r.Status != StatusPass || !strings.Contains(r.Regression, "no live retrieval to compare with") {
		t.Fatalf("latency gate against a baseline run: %+v", r)
	}
}

func TestCostTrends(t *testing.T) {
	c, err := ParseCriteria("c.yaml", []byte(costCriteria))
	if err != nil {
		t.Fatal(err)
	}
	var history []*summary.Summary
	for _, p95 := range []float64{200, 210, 240, 260} {
		history = append(history, withRetrieval(sum(0.9, 0.7, "g"), p95, 300, 0))
	}
	trends := Trends(history, c, 3)
	var lat *Trend
	for i := range trends {
		if trends[i].Measure == "latency_p95_ms" {
			lat = &trends[i]
		}
	}
	if lat == nil || lat.Unit != UnitMS || len(lat.Alerts) != 2 ||
		lat.Alerts[0] != "above the ceiling of 250.0 ms (gate latency_p95_ms)" || lat.Alerts[1] != "up 3 runs in a row (+60.0 ms in total)" {
		t.Fatalf("latency trend %+v", lat)
	}
	// Without live retrieval the cost gates are named as not checked.
	plain := []*summary.Summary{sum(0.9, 0.7, "g")}
	if nc := NotChecked(plain, c); len(nc) != 3 || !strings.Contains(nc[0], "not a live retrieval") {
		t.Fatalf("not checked %q", nc)
	}
}
