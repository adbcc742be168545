package summary

import (
	"errors"
	"strings"
	"testing"

	"github.com/evalgate/evalgate/schema"
)

// A file that is not a whole summary is an input error naming the file,
// its line and column and, for JSON that ends early or does not parse,
// the byte offset.
func TestParseErrors(t *testing.T) {
	for name, c := range map[string]struct{ data, want string }{
		"truncated":    {`{"schema":"evalgate.summary/v1","inp`, "s.json:1:37: corrupt or truncated file: the JSON ends early, at byte 36 of 36, inside a value (a truncated file?)"},
		"cut in value": {"{\"schema\":\"evalgate.summary/v1\",\n\"counts\": {\"gold_quer", "s.json:2:22: corrupt or truncated file: the JSON ends early, at byte 54 of 54"},
		"empty":        {"\n", "s.json: no data: empty file"},
		"bad JSON":     {"{\"schema\":\"evalgate.summary/v1\",\n \"a\": tru}", "s.json:2:10: corrupt or truncated file: invalid JSON at byte 43: invalid character '}'"},
		"trailing":     {`{"schema":"evalgate.summary/v1"} junk`, "s.json:1:34: corrupt or truncated file: invalid JSON at byte 34"},
		"wrong type":   {"{\"schema\":\"evalgate.summary/v1\",\n\"counts\": {\"gold_queries\": \"x\"}}", `s.json:2:31: wrong type: field "counts.gold_queries" at byte 63: want int64, got JSON string`},
		"not ours":     {`{"x": 1}`, `s.json:1: field "schema": wrong type: schema "", want "evalgate.summary/v1"`},
	} {
		_, err := Parse("s.json", []byte(c.data))
		var ie *schema.InputError
		if !errors.As(err, &ie) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %s…", name, err, c.want)
		}
	}
}

// Differences names every option that changes values, with both values,
// in a fixed order.
func TestConfigDifferences(t *testing.T) {
	now := Config{Measures: []string{"R@5"}, RelLevel: 1, RankBy: "score", Averaging: "gold-queries"}
	base := now
	base.Measures = []string{"RR"} // measures are compared value by value, not here
	if d := now.Differences(base); len(d) != 0 {
		t.Fatalf("same options: %v", d)
	}
	base = Config{RelLevel: 2, RankBy: "rank", Depth: 5, Averaging: "run-queries", SkipNoRelevant: true, Strict: true, JudgedOnly: true}
	var got []string
	for _, d := range now.Differences(base) {
		got = append(got, d.String())
	}
	want := []string{"rel_level (--rel-level) 2 in the baseline, 1 now", "rank_by (--rank-by) rank in the baseline, score now",
		"depth (--depth) 5 in the baseline, 0 now", "averaging (--only-run-queries) run-queries in the baseline, gold-queries now",
		"skip_no_relevant (--skip-no-relevant) true in the baseline, false now", "strict (--strict) true in the baseline, false now",
		"judged_only (--judged-only) true in the baseline, false now"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
