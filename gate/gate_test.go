package gate

import (
	"bytes"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/summary"
)

func seed(t *testing.T) *Criteria {
	t.Helper()
	c, err := LoadCriteria("testdata/seed-criteria.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sum builds a summary with R@5 and RR (and a tag group).
func sum(r5, rr float64, digest string) *summary.Summary {
	ms := []summary.Measure{
		{Name: "R@5", TRECName: "recall_5", Value: r5, Kind: "mean"},
		{Name: "RR", TRECName: "recip_rank", Value: rr, Kind: "mean"},
	}
	return &summary.Summary{
		Schema:   summary.SchemaVersion,
		Inputs:   summary.Inputs{Gold: summary.Input{Path: "gold.jsonl", Digest: digest}, Run: summary.Input{Path: "run.jsonl"}},
		Counts:   summary.Counts{ScoredQueries: 500},
		Measures: ms,
		Groups: []summary.Group{{Tag: "category", Value: "legal", Queries: 12, Measures: ms},
			{Tag: "category", Value: "policy", Queries: 300, Measures: ms}},
		Execution: summary.Execution{StartedAt: "2026-11-20T01:00:00Z"},
	}
}

func TestSeedCriteriaVerdicts(t *testing.T) {
	c := seed(t)
	if len(c.Gates) != 2 || c.Gates[0].Measure.String() != "R@5" || c.Gates[1].Measure.String() != "RR" ||
		c.Gates[1].Severity != SeverityWarning || *c.Gates[0].RegressionMax != 0.03 {
		t.Fatalf("parsed criteria %+v", c.Gates)
	}
	for _, tc := range []struct {
		name        string
		run, base   *summary.Summary
		verdict     string
		exit        int
		headline    string
		regressions []string
	}{
		{"pass", sum(0.874, 0.70, "g"), sum(0.870, 0.71, "g"), VerdictPass, 0,
			"✅ All 2 gates pass: retrieval recall@5 87.4% (+0.4 points).", []string{RegressionOK, RegressionOK}},
		{"warn: mrr below its floor", sum(0.874, 0.60, "g"), sum(0.870, 0.61, "g"), VerdictWarn, 0,
			"⚠️ Passes with warnings: retrieval MRR is 60.0%, below the floor of 62.0%.", []string{RegressionOK, RegressionOK}},
		{"fail: recall dropped", sum(0.812, 0.70, "g"), sum(0.870, 0.70, "g"), VerdictFail, 1,
			"❌ Blocked: retrieval recall@5 is 81.2%, below the floor of 85.0% (and 0 more",
			[]string{RegressionRegressed, RegressionOK}},
		{"fail: a drop above the floor", sum(0.86, 0.70, "g"), sum(0.90, 0.70, "g"), VerdictFail, 1,
			"❌ Blocked: retrieval recall@5 dropped from 90.0% to 86.0% (−4.0 points, more than the 3.0 points allowed).",
			[]string{RegressionRegressed, RegressionOK}},
		{"no baseline", sum(0.874, 0.70, "g"), nil, VerdictPass, 0,
			"✅ All 2 gates pass: retrieval recall@5 87.4%. Regression limits not checked: no baseline.",
			[]string{RegressionNoBaseline, RegressionNoBaseline}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Evaluate(c, tc.run, Options{Baseline: tc.base})
			if err != nil {
				t.Fatal(err)
			}
			if v.Verdict != tc.verdict || v.ExitCode != tc.exit {
				t.Fatalf("verdict %s exit %d, want %s %d", v.Verdict, v.ExitCode, tc.verdict, tc.exit)
			}
			if !strings.HasPrefix(v.Headline, strings.TrimSuffix(tc.headline, " (and 0 more")) {
				t.Fatalf("headline %q, want %q", v.Headline, tc.headline)
			}
			for i, want := range tc.regressions {
				if v.Gates[i].Regression != want {
					t.Errorf("gate %s regression %q, want %q", v.Gates[i].Name, v.Gates[i].Regression, want)
				}
			}
			// Every rendering says the verdict the exit code reports.
			tc.run.Gate = v
			var tb, cb, jb, hb bytes.Buffer
			if err := WriteTable(&tb, v); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(tb.String(), "verdict: "+strings.ToUpper(tc.verdict)+" (exit code ") {
				t.Fatalf("table verdict line:\n%s", tb.String())
			}
			if err := WriteComment(&cb, Report{Summary: tc.run, Baseline: tc.base}); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(cb.String(), "### evalgate: "+strings.ToUpper(tc.verdict)+"\n\n"+v.Headline) {
				t.Fatalf("comment:\n%s", cb.String())
			}

			if err := WriteJUnit(&jb, tc.run); err != nil {
				t.Fatal(err)
			}
			wantFailures := `failures="0"`
			if tc.exit == 1 {
				wantFailures = `failures="1"`
			}
			if !strings.Contains(jb.String(), wantFailures) || strings.Count(jb.String(), "<testcase ") != 2 {
				t.Fatalf("junit:\n%s", jb.String())
			}
			if err := WriteHTML(&hb, Report{Summary: tc.run, Baseline: tc.base}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(hb.String(), `class="verdict `+tc.verdict+`"`) {
				t.Fatalf("html verdict class missing")
			}
			// Without a baseline, every output says so: never a silent pass.
			if tc.base == nil {
				var js bytes.Buffer
				if err := tc.run.WriteJSON(&js); err != nil {
					t.Fatal(err)
				}
				for what, out := range map[string]string{"table": tb.String(), "comment": cb.String(), "junit": jb.String(),
					"html": hb.String(), "json": js.String()} {
					if strings.Count(out, "not checked: no baseline") < 2 {
						t.Errorf("%s does not say, for each gate, that the regression was not checked:\n%s", what, out)
					}
				}
			}
		})
	}
}

// The reports say what a gate's severity does — "blocks merge" or
// "warning only", under "if it fails" — apart from its result, so that a
// passed error gate never reads "✅ error". summary.json keeps the
// machine values.
func TestSeverityInWords(t *testing.T) {
	run, base := sum(0.874, 0.70, "g"), sum(0.870, 0.71, "g")
	v, err := Evaluate(seed(t), run, Options{Baseline: base})
	if err != nil {
		t.Fatal(err)
	}
	run.Gate = v
	var tb, cb, jb, hb, js bytes.Buffer
	_ = WriteTable(&tb, v)
	_ = WriteComment(&cb, Report{Summary: run, Baseline: base})
	_ = WriteJUnit(&jb, run)
	_ = WriteHTML(&hb, Report{Summary: run, Baseline: base})
	_ = run.WriteJSON(&js)
	for what, c := range map[string]struct {
		out  string
		want []string
	}{
		"table": {tb.String(), []string{"if it fails", "blocks merge  pass", "warning only  pass"}},
		"comment": {cb.String(), []string{"| limit | if it fails | result |",
			"| ≥ 85.0%, drop ≤ 3.0 points | blocks merge | ✅ pass |", "| ≥ 62.0%, drop ≤ 5.0 points | warning only | ✅ pass |"}},
		"junit": {jb.String(), []string{"if it fails: blocks merge", "if it fails: warning only"}},
		"html":  {hb.String(), []string{"<th>if it fails</th><th>result</th>", "<td>blocks merge</td>", "<td>warning only</td>"}},
		"json":  {js.String(), []string{`"severity": "error"`, `"severity": "warning"`}},
	} {
		for _, want := range c.want {
			if !strings.Contains(c.out, want) {
				t.Errorf("%s lacks %q:\n%s", what, want, c.out)
			}
		}
		if what != "json" && (strings.Contains(c.out, "✅ error") || strings.Contains(c.out, "severity")) {
			t.Errorf("%s shows the severity as a bare word:\n%s", what, c.out)
		}
	}
}

// A baseline that lacks a gated value leaves the regression limit
// unchecked: every output says so, the headline too, and
// --require-baseline refuses it.
func TestBaselineWithoutTheMeasure(t *testing.T) {
	c := seed(t)
	base := sum(0.870, 0.71, "g")
	base.Measures = base.Measures[1:] // RR only: no R@5
	run := sum(0.874, 0.70, "g")
	v, err := Evaluate(c, run, Options{Baseline: base})
	if err != nil {
		t.Fatal(err)
	}
	r := v.Gates[0]
	if r.Status != StatusPass || !strings.HasPrefix(r.Regression, "not checked: ") ||
		!slices.Contains(r.Reasons, "regression not checked: the saved summary of run.jsonl has no R@5") {
		t.Fatalf("gate %+v", r)
	}
	if !strings.HasSuffix(v.Headline, "Regression limit not checked for 1 gate: the baseline lacks the value.") {
		t.Fatalf("headline %q", v.Headline)
	}
	run.Gate = v
	var tb, cb, hb bytes.Buffer
	_ = WriteTable(&tb, v)
	_ = WriteComment(&cb, Report{Summary: run, Baseline: base})
	_ = WriteHTML(&hb, Report{Summary: run, Baseline: base})
	for what, out := range map[string]string{"table": tb.String(), "comment": cb.String(), "html": hb.String()} {
		if !strings.Contains(out, "regression not checked: the saved summary of run.jsonl has no R@5") {
			t.Errorf("%s hides the unchecked regression:\n%s", what, out)
		}
	}
	// A baseline was given: the error says what it lacks, not "no
	// baseline", and names no flag some commands do not have.
	_, err = Evaluate(c, run, Options{Baseline: base, RequireBaseline: true})
	want := `gate: the baseline lacks a gated value: gate "retrieval_recall_at_5": the saved summary of run.jsonl has no R@5, so its regression limit cannot be checked (--require-baseline)`
	if !errors.Is(err, ErrBaselineIncomplete) || errors.Is(err, ErrNoBaseline) || err.Error() != want {
		t.Fatalf("--require-baseline, baseline without R@5:\ngot  %v\nwant %s", err, want)
	}
}

// A gate on a tag no query has is a configuration error, not a pass, and
// like every criteria error it names the file and the line of the tag.
func TestGateOnUnknownTag(t *testing.T) {
	c, err := ParseCriteria("c.yaml", []byte("gates:\n  - name: legal\n    metric: R@5\n    tag: category=legall\n    threshold: 0.9\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Evaluate(c, sum(0.5, 0.5, "g"), Options{})
	want := `c.yaml:4: field "tag": gate "legal": no query has the tag category=legall (values of category: legal, policy)`
	var ie *schema.InputError
	if err == nil || err.Error() != want || !errors.As(err, &ie) || ie.File != "c.yaml" || ie.Line != 4 {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
}

// A passing headline counts the gates without ambiguity: how many of how
// many pass, how many had too few queries, in the singular for one.
func TestPassHeadlineCounts(t *testing.T) {
	const r5 = "  - name: retrieval_recall_at_5\n    threshold: 0.5\n"
	const mrr = "  - name: retrieval_mrr\n    threshold: 0.5\n"
	const legal = "  - name: legal\n    metric: R@5\n    tag: category=legal\n    min_queries: 30\n    threshold: 0.5\n"
	const policy = "  - name: policy\n    metric: R@5\n    tag: category=policy\n    min_queries: 500\n    threshold: 0.5\n"
	for gates, want := range map[string]string{
		r5:                  "✅ The 1 gate passes: retrieval recall@5 87.4% (+0.4 points).",
		r5 + mrr:            "✅ All 2 gates pass: retrieval recall@5 87.4% (+0.4 points).",
		r5 + mrr + legal:    "✅ 2 of 3 gates pass: retrieval recall@5 87.4% (+0.4 points); 1 has too few queries for a verdict.",
		r5 + legal:          "✅ 1 of 2 gates passes: retrieval recall@5 87.4% (+0.4 points); 1 has too few queries for a verdict.",
		r5 + legal + policy: "✅ 1 of 3 gates passes: retrieval recall@5 87.4% (+0.4 points); 2 have too few queries for a verdict.",
		legal:               "➖ No gate fails, but none was checked: the 1 gate has too few queries for a verdict.",
		legal + policy:      "➖ No gate fails, but none was checked: all 2 gates have too few queries for a verdict.",
	} {
		c, err := ParseCriteria("c.yaml", []byte("gates:\n"+gates))
		if err != nil {
			t.Fatal(err)
		}
		v, err := Evaluate(c, sum(0.874, 0.70, "g"), Options{Baseline: sum(0.870, 0.71, "g")})
		if err != nil {
			t.Fatal(err)
		}
		if v.Headline != want {
			t.Errorf("headline %q\nwant     %q", v.Headline, want)
		}
	}
}

// A gate whose only check is a regression limit, without a baseline value
// to check it against, checked nothing: its status is not_checked in the
// JSON, every report and the headline — never "pass" — and the exit code
// stays that of the gates that were checked.
func TestRegressionOnlyGateNotChecked(t *testing.T) {
	c, err := ParseCriteria("c.yaml", []byte(`gates:
  - name: retrieval_recall_at_5
    threshold: 0.85
    regression_max: 0.03
  - name: retrieval_mrr
    threshold: 0.6
  - name: recall_guard
    metric: R@5
    regression_max: 0.02
`))
	if err != nil {
		t.Fatal(err)
	}
	noR5 := sum(0.870, 0.71, "g")
	noR5.Measures = noR5.Measures[1:]
	for _, tc := range []struct {
		name   string
		base   *summary.Summary
		reason string
	}{
		{"no baseline", nil, "regression not checked: no baseline"},
		{"baseline lacks the measure", noR5, "regression not checked: the saved summary of run.jsonl has no R@5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := sum(0.874, 0.70, "g")
			v, err := Evaluate(c, run, Options{Baseline: tc.base})
			if err != nil {
				t.Fatal(err)
			}
			var statuses []string
			for _, r := range v.Gates {
				statuses = append(statuses, r.Status)
			}
			if !slices.Equal(statuses, []string{StatusPass, StatusPass, StatusNotChecked}) || v.Verdict != VerdictPass || v.ExitCode != 0 {
				t.Fatalf("statuses %v, verdict %s exit %d", statuses, v.Verdict, v.ExitCode)
			}
			if !slices.Contains(v.Gates[2].Reasons, tc.reason) {
				t.Fatalf("reasons %q lack %q", v.Gates[2].Reasons, tc.reason)
			}
			if want := "✅ 2 of 3 gates pass, 1 not checked: retrieval recall@5 87.4%"; !strings.HasPrefix(v.Headline, want) {
				t.Fatalf("headline %q, want it to start %q", v.Headline, want)
			}
			run.Gate = v
			var js, tb, cb, hb, jb bytes.Buffer
			_ = run.WriteJSON(&js)
			_ = WriteTable(&tb, v)
			_ = WriteComment(&cb, Report{Summary: run, Baseline: tc.base})
			_ = WriteHTML(&hb, Report{Summary: run, Baseline: tc.base})
			_ = WriteJUnit(&jb, run)
			for what, want := range map[string]string{
				js.String(): `"status": "not_checked"`,
				tb.String(): "recall_guard           R@5",
				cb.String(): "| ➖ not checked |",
				hb.String(): `<td class="status-not_checked">not checked</td>`,
				jb.String(): `<skipped message="` + tc.reason + `"></skipped>`,
			} {
				if !strings.Contains(what, want) {
					t.Errorf("output lacks %q:\n%s", want, what)
				}
			}
			if !regexp.MustCompile(`recall_guard .* not checked\n`).MatchString(tb.String()) {
				t.Errorf("table does not say not checked:\n%s", tb.String())
			}
			if !strings.Contains(jb.String(), `tests="3" failures="0" skipped="1"`) {
				t.Errorf("junit counts:\n%s", jb.String())
			}
		})
	}
	// Only such gates: nothing was checked, and the headline says so.
	only, err := ParseCriteria("c.yaml", []byte("gates:\n  - name: recall_guard\n    metric: R@5\n    regression_max: 0.02\n"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Evaluate(only, sum(0.874, 0.70, "g"), Options{})
	want := "➖ No gate fails, but none was checked: the 1 gate has only a regression limit, and it was not checked. Regression limits not checked: no baseline."
	if err != nil || v.Headline != want {
		t.Fatalf("headline %q (%v)\nwant     %q", v.Headline, err, want)
	}
}

// The "No baseline" note is about regression limits: criteria without
// one (threshold only) get no such note, in the table, the comment or
// JUnit; criteria with one do.
func TestNoBaselineNoteOnlyForRegressionLimits(t *testing.T) {
	const note = "No baseline: regression limits were not checked."
	floors, err := ParseCriteria("c.yaml", []byte("gates:\n  - name: retrieval_recall_at_5\n    threshold: 0.85\n"))
	if err != nil {
		t.Fatal(err)
	}
	// A regression limit on a gate without enough queries has no verdict
	// at all: it did not go unchecked for want of a baseline.
	few, err := ParseCriteria("c.yaml", []byte("gates:\n  - name: legal\n    metric: R@5\n    tag: category=legal\n    min_queries: 30\n    regression_max: 0.03\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Criteria{floors, few} {
		run := sum(0.874, 0.70, "g")
		v, err := Evaluate(c, run, Options{})
		if err != nil {
			t.Fatal(err)
		}
		run.Gate = v
		var tb, cb, jb bytes.Buffer
		_ = WriteTable(&tb, v)
		_ = WriteComment(&cb, Report{Summary: run})
		_ = WriteJUnit(&jb, run)
		if slices.Contains(v.Notes, note) || strings.Contains(v.Headline, "not checked") {
			t.Errorf("gate %s: notes %q, headline %q", c.Gates[0].Name, v.Notes, v.Headline)
		}
		for what, out := range map[string]string{"table": tb.String(), "comment": cb.String(), "junit": jb.String()} {
			if strings.Contains(out, "No baseline") || strings.Contains(out, "no baseline") {
				t.Errorf("gate %s: %s speaks of a baseline no limit needs:\n%s", c.Gates[0].Name, what, out)
			}
		}
	}
	v, err := Evaluate(seed(t), sum(0.874, 0.70, "g"), Options{})
	if err != nil || !slices.Contains(v.Notes, note) {
		t.Fatalf("seed criteria without a baseline: notes %q, %v", v.Notes, err)
	}
}

func TestIssueExampleSentence(t *testing.T) {
	c := seed(t)
	c.Gates[0].Threshold = nil // only the regression check
	v, err := Evaluate(c, sum(0.812, 0.70, "g"), Options{Baseline: sum(0.870, 0.70, "g")})
	if err != nil {
		t.Fatal(err)
	}
	want := "❌ Blocked: retrieval recall@5 dropped from 87.0% to 81.2% (−5.8 points, more than the 3.0 points allowed)."
	if v.Headline != want {
		t.Fatalf("headline %q\nwant     %q", v.Headline, want)
	}
}

func TestRequireBaselineAndGoldChange(t *testing.T) {
	c := seed(t)
	if _, err := Evaluate(c, sum(0.9, 0.7, "g"), Options{RequireBaseline: true}); !errors.Is(err, ErrNoBaseline) ||
		err.Error() != "gate: no baseline: give --baseline SUMMARY, or score with --baseline-run RUN" {
		t.Fatalf("require baseline: %v", err)
	}
	if _, err := Evaluate(c, sum(0.9, 0.7, "g1"), Options{Baseline: sum(0.9, 0.7, "g2")}); !errors.Is(err, ErrGoldChanged) {
		t.Fatalf("gold change: %v", err)
	}
	// The error names the baseline's file.
	if _, err := Evaluate(c, sum(0.9, 0.7, "g1"), Options{Baseline: sum(0.9, 0.7, "g2"), BaselineFile: "base.json"}); !errors.Is(err, ErrGoldChanged) ||
		!strings.HasPrefix(err.Error(), "base.json: gate: the baseline was scored on a different gold set (g2, now g1)") {
		t.Fatalf("gold change: %v", err)
	}
	v, err := Evaluate(c, sum(0.9, 0.7, "g1"), Options{Baseline: sum(0.9, 0.7, "g2"), AllowGoldChange: true})
	if err != nil || len(v.Notes) == 0 || !strings.Contains(v.Notes[0], "different gold set") {
		t.Fatalf("allowed gold change: %v %v", v, err)
	}
}

// A saved baseline scored with other options that change values is
// refused like one from another gold set, naming its file and every
// differing option with both values; --allow-config-change accepts it
// with a note.
func TestBaselineScoredDifferently(t *testing.T) {
	c := seed(t)
	run, base := sum(0.9, 0.7, "g"), sum(0.6, 0.5, "g")
	run.Config = summary.Config{RelLevel: 1, RankBy: "score", Averaging: "gold-queries"}
	base.Config = summary.Config{RelLevel: 2, RankBy: "score", Depth: 10, Averaging: "gold-queries", SkipNoRelevant: true}
	_, err := Evaluate(c, run, Options{Baseline: base, BaselineFile: "last-release.json"})
	want := "last-release.json: gate: the baseline was scored with other options: rel_level (--rel-level) 2 in the baseline, 1 now; " +
		"depth (--depth) 10 in the baseline, 0 now; skip_no_relevant (--skip-no-relevant) true in the baseline, false now; " +
		"score both with the same options or pass --allow-config-change"
	if !errors.Is(err, ErrConfigChanged) || !schema.IsInvalidInput(err) || err.Error() != want {
		t.Fatalf("got  %v\nwant %s", err, want)
	}
	v, err := Evaluate(c, run, Options{Baseline: base, AllowConfigChange: true})
	if err != nil || len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "rel_level (--rel-level) 2 in the baseline, 1 now") {
		t.Fatalf("allowed: %v %v", v, err)
	}
	// The same options: no note, no error.
	base.Config = run.Config
	if v, err := Evaluate(c, run, Options{Baseline: base}); err != nil || len(v.Notes) != 0 {
		t.Fatalf("same options: %v %v", v, err)
	}
}

func TestTagGateNeedsQueries(t *testing.T) {
	c, err := ParseCriteria("c.yaml", []byte(`gates:
  - name: legal_recall
    metric: recall@5
    tag: category=legal
    min_queries: 30
    threshold: 0.95
  - name: policy_recall
    metric: recall@5
    tag: category=policy
    min_queries: 30
    threshold: 0.95
`))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Evaluate(c, sum(0.87, 0.7, "g"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Gates[0].Status != StatusNotEnoughQuery || !strings.Contains(v.Gates[0].Reasons[0], "12 with category=legal, at least 30") {
		t.Fatalf("legal gate %+v", v.Gates[0])
	}
	if v.Gates[1].Status != StatusFail || v.Verdict != VerdictFail {
		t.Fatalf("policy gate %+v, verdict %s", v.Gates[1], v.Verdict)
	}
}

func TestSignificanceRequirement(t *testing.T) {
	c, _ := ParseCriteria("c.yaml", []byte("gates:\n  - name: r5\n    metric: R@5\n    regression_max: 0.01\n    significant: true\n"))
	run := sum(0.85, 0.7, "g")
	run.Baseline = &summary.Baseline{Measures: sum(0.87, 0.7, "g").Measures}
	noisy, clear := 0.31, 0.002
	run.Comparison = &summary.Comparison{Measures: []summary.MeasureComparison{{Name: "R@5", PValue: &noisy}}}
	v, _ := Evaluate(c, run, Options{})
	if v.Verdict != VerdictPass || v.Gates[0].Regression != RegressionWithinNoise {
		t.Fatalf("a non-significant drop failed the gate: %+v", v.Gates[0])
	}
	run.Comparison.Measures[0].PValue = &clear
	v, _ = Evaluate(c, run, Options{})
	if v.Verdict != VerdictFail || !strings.Contains(v.Headline, "p = 0.002") {
		t.Fatalf("a significant drop passed: %+v", v)
	}
}

// A significant: true gate whose drop has no p-value says why: a saved
// summary has no per-query pairs, a baseline run scored with
// --permutations 0 has pairs but no randomization test.
func TestSignificanceNotCheckedSaysWhy(t *testing.T) {
	c, _ := ParseCriteria("c.yaml", []byte("gates:\n  - name: r5\n    metric: R@5\n    regression_max: 0.01\n    significant: true\n"))
	run := sum(0.85, 0.7, "g")
	v, _ := Evaluate(c, run, Options{Baseline: sum(0.87, 0.7, "g")})
	if want := "significance not checked: the saved summary of run.jsonl has no per-query pairs (they come from a baseline run scored in the same job, --baseline-run)"; v.Verdict != VerdictFail || !strings.HasSuffix(v.Gates[0].Reasons[0], want) {
		t.Fatalf("saved baseline: %q, want it to end in %q", v.Gates[0].Reasons[0], want)
	}
	run.Baseline = &summary.Baseline{Input: summary.Input{Path: "base.jsonl"}, Measures: sum(0.87, 0.7, "g").Measures}
	lo, hi := -0.03, -0.01
	run.Comparison = &summary.Comparison{Replicates: 1000, Permutations: 0,
		Measures: []summary.MeasureComparison{{Name: "R@5", CILow: &lo, CIHigh: &hi}}}
	v, _ = Evaluate(c, run, Options{})
	r := v.Gates[0]
	if want := "significance not checked: no permutation test ran (--permutations 0)"; v.Verdict != VerdictFail || !strings.HasSuffix(r.Reasons[0], want) ||
		strings.Contains(r.Reasons[0], "needs per-query pairs") {
		t.Fatalf("pairs without permutations: %q, want it to end in %q", r.Reasons[0], want)
	}
	run.Comparison.Permutations = 1000
	run.Comparison.Measures = nil // R@5 was not compared
	v, _ = Evaluate(c, run, Options{})
	if want := "significance not checked: the comparison with the baseline run base.jsonl has no p-value for R@5"; !strings.HasSuffix(v.Gates[0].Reasons[0], want) {
		t.Fatalf("measure not compared: %q, want it to end in %q", v.Gates[0].Reasons[0], want)
	}
}

// A drop is stated as its size ("dropped 2.0 points"), never as a
// negative number after "dropped"; whether it is significant is said in
// words.
func TestDropWording(t *testing.T) {
	c, _ := ParseCriteria("c.yaml", []byte("gates:\n  - name: r5\n    metric: R@5\n    regression_max: 0.01\n    significant: true\n"))
	run := sum(0.85, 0.7, "g")
	run.Baseline = &summary.Baseline{Measures: sum(0.87, 0.7, "g").Measures}
	noisy, clear := 0.31, 0.002
	run.Comparison = &summary.Comparison{Permutations: 1000, Measures: []summary.MeasureComparison{{Name: "R@5", PValue: &noisy}}}
	v, _ := Evaluate(c, run, Options{})
	if want := "r5 dropped 2.0 points, but the drop is not significant (p = 0.310 ≥ 0.05)"; v.Gates[0].Reasons[0] != want {
		t.Errorf("not significant: %q\nwant %q", v.Gates[0].Reasons[0], want)
	}
	run.Comparison.Measures[0].PValue = &clear
	v, _ = Evaluate(c, run, Options{})
	if want := "r5 dropped from 87.0% to 85.0% (−2.0 points, more than the 1.0 points allowed); the drop is significant (p = 0.002 < 0.05)"; v.Gates[0].Reasons[0] != want {
		t.Errorf("significant: %q\nwant %q", v.Gates[0].Reasons[0], want)
	}
}

// One query is "1 query", in the comment and the report.
func TestOneQuery(t *testing.T) {
	c, _ := ParseCriteria("c.yaml", []byte("gates:\n  - name: legal\n    metric: R@5\n    tag: category=legal\n    min_queries: 30\n    threshold: 0.5\n"))
	run := sum(0.874, 0.70, "g")
	run.Counts.ScoredQueries, run.Groups[0].Queries = 1, 1
	v, err := Evaluate(c, run, Options{})
	if err != nil {
		t.Fatal(err)
	}
	run.Gate = v
	var cb, hb bytes.Buffer
	_ = WriteComment(&cb, Report{Summary: run})
	_ = WriteHTML(&hb, Report{Summary: run})
	for what, out := range map[string]string{"comment": cb.String(), "html": hb.String()} {
		if !strings.Contains(out, "1 query scored") || strings.Contains(out, "1 queries") {
			t.Errorf("%s says \"1 queries\":\n%s", what, out)
		}
	}
}

func TestCriteriaErrors(t *testing.T) {
	for name, c := range map[string]struct {
		yaml, want string
		line       int64
	}{
		"unknown key":        {"gates:\n  - name: retrieval_mrr\n    threshold: 0.6\n    treshold: 0.7\n", `field "treshold": unknown key`, 4},
		"unknown top key":    {"gate:\n  - name: x\n", `field "gate": unknown key`, 1},
		"unknown measure":    {"gates:\n  - name: my_gate\n    threshold: 0.5\n", "cannot tell the measure", 2},
		"bad metric":         {"gates:\n  - name: g\n    metric: recal@5\n    threshold: 0.5\n", "unknown measure", 2},
		"threshold > 1":      {"gates:\n  - name: retrieval_mrr\n    threshold: 85\n", "outside [0,1]", 3},
		"negative reg":       {"gates:\n  - name: retrieval_mrr\n    regression_max: -0.1\n", "outside [0,1]", 3},
		"severity":           {"gates:\n  - name: retrieval_mrr\n    threshold: 0.5\n    severity: fatal\n", "want error or warning", 4},
		"no limits":          {"gates:\n  - name: retrieval_mrr\n", "neither threshold nor regression_max", 2},
		"count measure":      {"gates:\n  - name: g\n    metric: NumRet\n    threshold: 0.5\n", "is a count", 2},
		"duplicate gate":     {"gates:\n  - name: retrieval_mrr\n    threshold: 0.5\n  - name: retrieval_mrr\n    threshold: 0.6\n", "already defined at line 2", 4},
		"bad tag":            {"gates:\n  - name: retrieval_mrr\n    threshold: 0.5\n    tag: legal\n", "want name=value", 4},
		"not yaml":           {"gates: [\n", "invalid YAML", 1},
		"empty":              {"", "empty criteria", 1},
		"number as text":     {"gates:\n  - name: retrieval_mrr\n    threshold: high\n", "want a finite number", 3},
		"NaN threshold":      {"gates:\n  - name: retrieval_mrr\n    threshold: NaN\n", "want a finite number", 3},
		"NaN regression":     {"gates:\n  - name: retrieval_mrr\n    regression_max: nan\n", "want a finite number", 3},
		"Inf threshold":      {"gates:\n  - name: retrieval_mrr\n    threshold: .inf\n", "want a finite number", 3},
		"NaN alpha":          {"gates:\n  - name: retrieval_mrr\n    threshold: 0.5\n    alpha: NaN\n", "want a finite number", 4},
		"min_queries no tag": {"gates:\n  - name: retrieval_mrr\n    threshold: 0.5\n    min_queries: 5\n", "applies to gates with a tag", 2},
		// A repeated key at any level would drop the first one silently:
		// a second gates: list replaced the first.
		"second gates list": {"gates:\n  - name: retrieval_mrr\n    threshold: 0.9\ngates:\n  - name: retrieval_recall_at_5\n    threshold: 0.5\n",
			`field "gates": repeated key (first at line 1)`, 4},
		"repeated gate key": {"gates:\n  - name: retrieval_mrr\n    threshold: 0.9\n    threshold: 0.1\n", `field "threshold": repeated key (first at line 3)`, 4},
		"repeated top key":  {"version: 1\nversion: 1\ngates:\n  - name: retrieval_mrr\n    threshold: 0.9\n", `field "version": repeated key`, 2},
		"repeated deep key": {"gates:\n  - name: retrieval_mrr\n    threshold: 0.9\n    tag: {a: 1, a: 2}\n", `field "a": repeated key`, 4},
		// A second document (after ---) was ignored: its gates never ran.
		"second document": {"gates:\n  - name: retrieval_mrr\n    threshold: 0.1\n---\ngates:\n  - name: retrieval_recall_at_5\n    threshold: 0.99\n",
			"a second YAML document starts here", 4},
		"bad second document": {"gates:\n  - name: retrieval_mrr\n    threshold: 0.1\n---\ngates: [\n", "invalid YAML", 5},
	} {
		_, err := ParseCriteria("criteria.yaml", []byte(c.yaml))
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		var ie *schema.InputError
		if !errors.As(err, &ie) || !schema.IsInvalidInput(err) {
			t.Errorf("%s: %T %v is not an input error", name, err, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || ie.Line != c.line || ie.File != "criteria.yaml" {
			t.Errorf("%s: %v (line %d), want %q at line %d", name, err, ie.Line, c.want, c.line)
		}
	}
}

func TestHumanize(t *testing.T) {
	for in, want := range map[string]string{
		"retrieval_recall_at_5": "retrieval recall@5", "retrieval_mrr": "retrieval MRR", "retrieval_ndcg_at_10": "retrieval nDCG@10", "legal_map": "legal MAP",
		"R@5": "recall@5", "RR": "MRR", "Success@10": "hit rate@10", "nDCG@10": "nDCG@10", "AP": "MAP",
	} {
		if got := Humanize(in); got != want {
			t.Errorf("Humanize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTrendsAndAlerts(t *testing.T) {
	c := seed(t)
	var hist []*summary.Summary
	for i, r5 := range []float64{0.90, 0.89, 0.88, 0.86, 0.84} {
		s := sum(r5, 0.70, "g")
		s.Execution.StartedAt = "2026-11-1" + string(rune('0'+i)) + "T01:00:00Z"
		hist = append(hist, s)
	}
	trends := Trends(hist, c, 3)
	var r5 Trend
	for _, tr := range trends {
		if tr.Measure == "R@5" {
			r5 = tr
		}
	}
	if r5.Current != 0.84 || r5.Max != 0.90 || r5.Min != 0.84 || len(r5.Alerts) != 2 {
		t.Fatalf("R@5 trend %+v", r5)
	}
	var b bytes.Buffer
	if err := WriteTrends(&b, trends, nil); err != nil {
		t.Fatal(err)
	}
	// Four drops in a row: the alert says four, whatever --down-nights.
	for _, want := range []string{"below the floor of 85.0%", "down 4 runs in a row (−6.0 points in total)", "5 runs"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("trends lack %q:\n%s", want, b.String())
		}
	}
	dir := DirHistory{Dir: t.TempDir()}
	for _, s := range hist {
		if err := Record(t.Context(), dir, s); err != nil {
			t.Fatal(err)
		}
	}
	back, err := Load(t.Context(), dir)
	if err != nil || len(back) != 5 || back[4].Measures[0].Value != 0.84 {
		t.Fatalf("history round trip: %d entries, %v", len(back), err)
	}
}

// The down-trend alert reports the streak the history has, not the
// --down-nights that set it off.
// History checks a tag gate's floor on the tag group's values, and names
// every gate it cannot check instead of passing over it in silence.
func TestTrendsTagGatesAndUncheckedFloors(t *testing.T) {
	c, err := ParseCriteria("c.yaml", []byte(`gates:
  - name: legal_recall
    metric: R@5
    tag: category=legal
    threshold: 0.8
  - name: policy_recall
    metric: R@5
    tag: category=policy
    min_queries: 400
    threshold: 0.8
  - name: ndcg_floor
    metric: nDCG@10
    threshold: 0.5
  - name: hr_recall
    metric: R@5
    tag: category=hr
    threshold: 0.5
  - name: mrr_guard
    metric: RR
    regression_max: 0.02
`))
	if err != nil {
		t.Fatal(err)
	}
	var hist []*summary.Summary
	for _, legal := range []float64{0.85, 0.75} {
		s := sum(0.9, 0.7, "g")
		s.Groups[0].Measures = []summary.Measure{{Name: "R@5", TRECName: "recall_5", Value: legal, Kind: "mean"}}
		hist = append(hist, s)
	}
	trends := Trends(hist, c, 0)
	i := slices.IndexFunc(trends, func(t Trend) bool { return t.Tag == "category=legal" })
	if i < 0 || trends[i].Measure != "R@5" || trends[i].Current != 0.75 ||
		!slices.Equal(trends[i].Alerts, []string{"below the floor of 80.0% (gate legal_recall)"}) {
		t.Fatalf("no floor alert for the tag gate: %+v", trends)
	}
	if Alerts(trends) != 1 {
		t.Fatalf("%d alerts, want 1", Alerts(trends))
	}
	want := []string{
		"gate policy_recall (R@5 for category=policy): not checked: not enough queries: 300 with category=policy in the latest run, at least 400 needed",
		"gate ndcg_floor (nDCG@10): not checked: the latest run has no nDCG@10",
		"gate hr_recall (R@5 for category=hr): not checked: no query of the latest run has the tag category=hr",
		"gate mrr_guard (RR): not checked: it has no floor (threshold): history checks floors, not regression limits",
	}
	nc := NotChecked(hist, c)
	if !slices.Equal(nc, want) {
		t.Fatalf("not checked:\n%s\nwant\n%s", strings.Join(nc, "\n"), strings.Join(want, "\n"))
	}
	var b bytes.Buffer
	if err := WriteTrends(&b, trends, nc); err != nil {
		t.Fatal(err)
	}
	for _, w := range append([]string{"R@5 for category=legal  75.0%", "1 alert"}, want...) {
		if !strings.Contains(b.String(), w) {
			t.Errorf("history output lacks %q:\n%s", w, b.String())
		}
	}
}

func TestDownStreakLength(t *testing.T) {
	var hist []*summary.Summary
	for _, r5 := range []float64{0.80, 0.90, 0.88, 0.87, 0.85} { // up, then down 3 runs in a row
		hist = append(hist, sum(r5, 0.70, "g"))
	}
	alerts := func(down int) string {
		for _, tr := range Trends(hist, nil, down) {
			if tr.Measure == "R@5" {
				return strings.Join(tr.Alerts, "; ")
			}
		}
		return ""
	}
	for down, want := range map[int]string{
		1: "down 3 runs in a row (−5.0 points in total)",
		2: "down 3 runs in a row (−5.0 points in total)",
		3: "down 3 runs in a row (−5.0 points in total)",
		4: "",
		0: "",
	} {
		if got := alerts(down); got != want {
			t.Errorf("--down-nights %d: alerts %q, want %q", down, got, want)
		}
	}
	hist = hist[:3] // 0.80, 0.90, 0.88: down once
	if got, want := alerts(1), "down since the previous run (−2.0 points)"; got != want {
		t.Errorf("one drop: %q, want %q", got, want)
	}
}

// A history of one run says "1 run".
func TestOneRun(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTrends(&b, Trends([]*summary.Summary{sum(0.9, 0.7, "g")}, nil, 3), nil); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "1 run\n") {
		t.Fatalf("trends:\n%s", b.String())
	}
}

// A saved summary as baseline (--baseline) gives the reports what it
// holds: the tag breakdown of the comment, the baseline bars per tag and
// the baseline's recall curve.
func TestSavedBaselineInReports(t *testing.T) {
	c := seed(t)
	run, base := sum(0.874, 0.70, "g"), sum(0.870, 0.71, "g")
	base.Groups[1].Measures = []summary.Measure{{Name: "R@5", Value: 0.95, Kind: "mean"}} // policy moved most
	run.RecallCurve = &summary.Curve{Run: []float64{0.5, 0.8, 0.9}}
	base.RecallCurve = &summary.Curve{Run: []float64{0.4, 0.7, 0.85}}
	v, err := Evaluate(c, run, Options{Baseline: base})
	if err != nil {
		t.Fatal(err)
	}
	run.Gate = v
	var cb, hb bytes.Buffer
	if err := WriteComment(&cb, Report{Summary: run, Baseline: base}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cb.String(), "| category=policy | 300 | 87.4% | 95.0% | −7.6 points |") {
		t.Fatalf("comment has no tag breakdown against the saved baseline:\n%s", cb.String())
	}
	if err := WriteHTML(&hb, Report{Summary: run, Baseline: base}); err != nil {
		t.Fatal(err)
	}
	h := hb.String()
	if strings.Count(h, `class="bar-baseline"`) != 2 || !strings.Contains(h, "compared with the saved summary of run.jsonl") {
		t.Fatalf("html lacks the baseline bars or says nothing of the baseline")
	}
	if i := strings.Index(h, `id="recall-curve"`); i < 0 || !strings.Contains(h[i:], colorBaseline) {
		t.Fatalf("html recall curve lacks the baseline series")
	}
}

// A tag gate takes its interval and p-value from the paired comparison
// of its group, so `significant: true` works on tag gates too.
func TestTagGateSignificance(t *testing.T) {
	c, err := ParseCriteria("c.yaml", []byte("gates:\n  - name: policy\n    metric: R@5\n    tag: category=policy\n    regression_max: 0.01\n    significant: true\n"))
	if err != nil {
		t.Fatal(err)
	}
	run := sum(0.85, 0.7, "g")
	base := sum(0.87, 0.7, "g")
	run.Baseline = &summary.Baseline{Measures: base.Measures, Groups: base.Groups}
	lo, hi, noisy, clear := -0.05, 0.01, 0.4, 0.003
	run.Comparison = &summary.Comparison{Groups: []summary.GroupComparison{{Tag: "category", Value: "policy", Queries: 300,
		Measures: []summary.MeasureComparison{{Name: "R@5", CILow: &lo, CIHigh: &hi, PValue: &noisy}}}}}
	v, err := Evaluate(c, run, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := v.Gates[0]
	if v.Verdict != VerdictPass || r.Regression != RegressionWithinNoise || r.CILow == nil || *r.CILow != lo || *r.PValue != noisy {
		t.Fatalf("noisy tag drop: verdict %s, gate %+v", v.Verdict, r)
	}
	run.Comparison.Groups[0].Measures[0].PValue = &clear
	if v, _ = Evaluate(c, run, Options{}); v.Verdict != VerdictFail || !strings.Contains(v.Headline, "p = 0.003") {
		t.Fatalf("significant tag drop passed: %+v", v)
	}
}

// The criteria files shown in the README and docs/gate.md are valid: a
// user copying them gets no error.
func TestDocumentedCriteriaParse(t *testing.T) {
	block := regexp.MustCompile("(?s)(?:```yaml\n|^#[^\n]*\n(?:#[^\n]*\n)*)(gates:.*?)(?:```|$)")
	n := 0
	for _, doc := range []string{"../README.md", "../docs/gate.md", "../examples/ship-criteria.yaml"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range block.FindAllSubmatch(b, -1) {
			if _, err := ParseCriteria(doc, m[1]); err != nil {
				t.Errorf("%s: %v\n%s", doc, err, m[1])
			}
			n++
		}
	}
	if n < 3 {
		t.Fatalf("found %d criteria examples, want one in each document", n)
	}
}
