package retriever

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/evalgate/evalgate/schema"
)

// envOf returns an environment lookup over a map.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

var noEnv = envOf(nil)

const fullFile = `url: http://search.internal:9200/chunks/_search   # a template too
method: POST
headers:
  Authorization: "Bearer ${SEARCH_TOKEN}"
body: '{"query": {"match": {"text": {{json .Query}}}}, "size": {{.K}}}'
results: hits.hits
id: _id
score: _score
k: 100
concurrency: 16
rate: 200
timeout: 10s
retries: 4
`

func TestParseIssueExample(t *testing.T) {
	c, err := Parse("r.yaml", []byte(fullFile), envOf(map[string]string{"SEARCH_TOKEN": "s3cr3t-token"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.K != 100 || c.Concurrency != 16 || c.Rate != 200 || c.Timeout != 10*time.Second || c.Retries != 4 {
		t.Errorf("settings: %+v", c)
	}
	if c.MaxRetryAfter != DefaultMaxRetryAfter {
		t.Errorf("max_retry_after = %s, want the default", c.MaxRetryAfter)
	}
	if c.search.method != "POST" || c.results.String() != "hits.hits" || c.id.String() != "_id" || !c.hasScore {
		t.Errorf("request or paths: %s %s %s", c.search.method, c.results, c.id)
	}
	if string(c.Source) != fullFile {
		t.Error("Source is not the file as written")
	}
	for _, s := range []string{c.String(), fmt.Sprintf("%v %+v %#v %s", c, c, c, *c)} {
		if strings.Contains(s, "s3cr3t") {
			t.Errorf("String shows the secret: %s", s)
		}
	}
	if !strings.Contains(c.String(), "POST http://search.internal:9200/chunks/_search") {
		t.Errorf("String = %s", c.String())
	}
	if got := c.Redact(`{"auth":"Bearer s3cr3t-token"}`); got != `{"auth":"Bearer [redacted]"}` {
		t.Errorf("Redact = %s", got)
	}
	if c.Line("results") != 6 || c.Line("headers.Authorization") != 4 {
		t.Errorf("lines: results %d, header %d", c.Line("results"), c.Line("headers.Authorization"))
	}
	if len(c.Digest()) != 64 {
		t.Errorf("digest %q", c.Digest())
	}
}

func TestParseDefaults(t *testing.T) {
	c, err := Parse("r.yaml", []byte("url: http://x/search?q={{.Query | urlquery}}\nresults: hits\nid: id\n"), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.K != DefaultK || c.Concurrency != DefaultConcurrency || c.Rate != 0 || c.Timeout != DefaultTimeout || c.Retries != DefaultRetries {
		t.Errorf("defaults: %+v", c)
	}
	if c.search.method != "GET" || c.hasScore || c.HasEmbed() {
		t.Errorf("method %s, score %v, embed %v", c.search.method, c.hasScore, c.HasEmbed())
	}
}

// TestParseErrors: every error names the file, the line and the key.
func TestParseErrors(t *testing.T) {
	const base = "url: http://x/s\nresults: hits\nid: id\n"
	tests := []struct {
		name  string
		file  string
		env   map[string]string
		line  int64
		field string
		want  string
	}{
		{"unknown key", base + "sise: 3\n", nil, 4, "sise", "unknown key"},
		{"repeated key", base + "k: 3\nk: 4\n", nil, 5, "k", "repeated key (first at line 4)"},
		{"multi-document", base + "---\nurl: http://y\n", nil, 4, "", "second YAML document"},
		{"empty file", "", nil, 1, "", "empty retriever file"},
		{"not a mapping", "- a\n- b\n", nil, 1, "", "want a mapping"},
		{"invalid YAML", "url: [\n", nil, 1, "", "invalid YAML"},
		{"missing url", "results: hits\nid: id\n", nil, 1, "url", "missing"},
		{"missing id", "url: http://x/s\nresults: hits\n", nil, 1, "id", "missing"},
		{"k zero", base + "k: 0\n", nil, 4, "k", "outside [1, 100000]"},
		{"k not a number", base + "k: ten\n", nil, 4, "k", "want a whole number"},
		{"concurrency zero", base + "concurrency: 0\n", nil, 4, "concurrency", "outside"},
		{"rate negative", base + "rate: -1\n", nil, 4, "rate", "outside"},
		{"rate NaN", base + "rate: .nan\n", nil, 4, "rate", "want a number"},
		{"timeout zero", base + "timeout: 0s\n", nil, 4, "timeout", "outside"},
		{"timeout without unit", base + "timeout: 10\n", nil, 4, "timeout", "want a duration with a unit"},
		{"retries negative", base + "retries: -1\n", nil, 4, "retries", "outside [0, 100]"},
		{"max_retry_after bad", base + "max_retry_after: soon\n", nil, 4, "max_retry_after", "want a duration"},
		{"method PUT", base + "method: PUT\n", nil, 4, "method", "want GET or POST"},
		{"body with GET", base + "method: GET\nbody: '{}'\n", nil, 5, "body", "needs method: POST"},
		{"k a list", base + "k: [1]\n", nil, 4, "k", "want a single value"},
		{"empty score", base + "score:\n", nil, 4, "score", "empty value"},
		{"bad path", "url: http://x/s\nresults: hits..hits\nid: id\n", nil, 2, "results", "invalid path"},
		{"bad index", "url: http://x/s\nresults: hits[x]\nid: id\n", nil, 2, "results", "want [n]"},
		{"id_match without group", base + "id_match: '::.+$'\n", nil, 4, "id_match", "exactly one capturing group"},
		{"id_match invalid", base + "id_match: '(['\n", nil, 4, "id_match", "invalid regular expression"},
		{"headers a list", base + "headers: [a]\n", nil, 4, "headers", "want a mapping"},
		{"bad header name", base + "headers:\n  \"Bad Name\": x\n", nil, 5, "headers", "invalid header name"},
		{"repeated header", base + "headers:\n  Accept: a\n  accept: b\n", nil, 6, "headers.accept", "repeated header (first at line 5)"},
		{"unset variable", "url: http://x/s\nresults: hits\nid: id\nheaders:\n  Authorization: Bearer ${TOKEN}\n", nil, 5, "headers.Authorization", "environment variable TOKEN is not set"},
		{"empty variable", "url: http://x/s\nresults: hits\nid: id\nheaders:\n  Authorization: Bearer ${TOKEN}\n", map[string]string{"TOKEN": ""}, 5, "headers.Authorization", "not set or empty"},
		{"bad reference", "url: http://x/${1X}\nresults: hits\nid: id\n", nil, 1, "url", "want ${NAME}"},
		{"unterminated reference", "url: http://x/${X\nresults: hits\nid: id\n", nil, 1, "url", "unterminated"},
		{"template parse", "url: http://x/s?q={{.Query | urlquery\nresults: hits\nid: id\n", nil, 1, "url", "template does not parse"},
		{"template unknown function", base + "body: |\n  {\n    \"q\": {{jsn .Query}}\n  }\n", nil, 6, "body", `function "jsn" not defined`},
		{"template unknown field", base + "body: |\n  {\n\n    \"q\": {{json .Querry}}\n  }\n", nil, 7, "body", "can't evaluate field Querry"},
		{"body not JSON-escaped", base + "body: '{\"q\": \"{{.Query}}\"}'\n", nil, 4, "body", "not valid JSON for the sample query"},
		{"url not escaped", "url: http://x/s?q={{.Query}}\nresults: hits\nid: id\n", nil, 1, "url", "use {{.Query | urlquery}}"},
		{"url scheme", "url: ftp://x/s\nresults: hits\nid: id\n", nil, 1, "url", "want an http:// or https:// URL"},
		{"url no host", "url: http:///s\nresults: hits\nid: id\n", nil, 1, "url", "no host"},
		{"vector without embed", base + "body: '{\"v\": {{json .Vector}}}'\n", nil, 4, "body", "has none"},
		{"embed without vector", base + "embed:\n  url: http://e/v1/embeddings\n  body: '{}'\n", nil, 4, "embed.vector", "missing"},
		{"embed unknown key", base + "embed:\n  url: http://e/v1/embeddings\n  vector: data[0].embedding\n  model: x\n", nil, 7, "embed.model", "unknown key"},
		{"embed not a mapping", base + "embed: yes\n", nil, 4, "embed", "want a mapping"},
		{"results_optional not a bool", base + "results_optional: sometimes\n", nil, 4, "results_optional", "want true or false"},
		{"results_optional on an index", "url: http://x/s\nresults: 'a[0]'\nid: id\nresults_optional: true\n", nil, 4, "results_optional", "ends with a key"},
		{"url of a tag not escaped", "url: ftp://x/s?c={{.Tags.category}}\nresults: hits\nid: id\n", nil, 1, "url", "want an http:// or https:// URL"},
		{"header line break", base + "headers:\n  X-Q: \"{{.Query}}\\n\"\n", nil, 5, "headers.X-Q", "line break"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("ret.yaml", []byte(tc.file), envOf(tc.env))
			if err == nil {
				t.Fatal("no error")
			}
			var ie *schema.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v (%T) is not an InputError", err, err)
			}
			if ie.File != "ret.yaml" || ie.Line != tc.line || ie.Field != tc.field {
				t.Errorf("error at %s:%d field %q, want line %d field %q: %v", ie.File, ie.Line, ie.Field, tc.line, tc.field, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
		})
	}
}

// TestParseAllErrors: several problems are all reported.
func TestParseAllErrors(t *testing.T) {
	_, err := Parse("ret.yaml", []byte("url: http://x/s\nresults: hits\nid: id\nk: 0\nrate: x\nfoo: 1\n"), noEnv)
	var el *schema.ErrorList
	if !errors.As(err, &el) || el.Len() != 3 {
		t.Fatalf("want 3 errors, got %v", err)
	}
}

// TestSecretsNeverInterpreted: a value holding template syntax is sent as
// written, and a query holding a reference does not expand it.
func TestSecretsNeverInterpreted(t *testing.T) {
	file := "url: http://x/s\nresults: hits\nid: id\nheaders:\n  X-Key: \"${KEY}\"\nbody: '{\"q\": {{json .Query}}, \"d\": \"${D:-{{.K}}}\", \"lit\": \"$$HOME\"}'\n"
	c, err := Parse("r.yaml", []byte(file), envOf(map[string]string{"KEY": "{{.Query}}"}))
	if err != nil {
		t.Fatal(err)
	}
	data := queryData{Query: "${KEY} is mine", K: 5}
	header, err := c.search.headers[0].value.execute(data)
	if err != nil {
		t.Fatal(err)
	}
	if header != "{{.Query}}" {
		t.Errorf("header = %q, want the value as is", header)
	}
	body, err := c.search.body.execute(data)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"q": "${KEY} is mine", "d": "{{.K}}", "lit": "$HOME"}`; body != want {
		t.Errorf("body = %s, want %s", body, want)
	}
	if c.Redact("{{.Query}}") != "[redacted]" {
		t.Error("the secret is not redacted")
	}
	if c.Redact("{{.K}}") != "{{.K}}" {
		t.Error("a default from the file is treated as a secret")
	}
}

// TestParseErrorsHideSecrets: an error about a template that holds a
// secret does not show it.
func TestParseErrorsHideSecrets(t *testing.T) {
	file := "url: http://x/s?key=${KEY}&q={{.Query}}\nresults: hits\nid: id\n"
	_, err := Parse("r.yaml", []byte(file), envOf(map[string]string{"KEY": "hunter2 x"}))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error %v", err)
	}
}

func TestParseTagTemplate(t *testing.T) {
	// A tag the sample query lacks does not fail the parse; it fails the
	// query that lacks it (see TestRetrieveMissingTag).
	file := "url: http://x/s?cat={{.Tags.category | urlquery}}\nresults: hits\nid: id\n"
	if _, err := Parse("r.yaml", []byte(file), noEnv); err != nil {
		t.Fatal(err)
	}
}

func TestParsePath(t *testing.T) {
	good := map[string]string{
		"hits.hits":          "hits|hits",
		"result":             "result",
		"data.Get.Chunk":     "data|Get|Chunk",
		"root.children":      "root|children",
		"[0].items":          "[0]|items",
		"_additional.id":     "_additional|id",
		"fields.doc_id":      "fields|doc_id",
		"data[0].embedding":  "data|[0]|embedding",
		`fields["doc.id"]`:   "fields|doc.id",
		`["a]b"][2][10].c-d`: "a]b|[2]|[10]|c-d",
		".":                  "",
	}
	for in, want := range good {
		p, err := ParsePath(in)
		if err != nil {
			t.Errorf("%q: %v", in, err)
			continue
		}
		var parts []string
		for _, st := range p.steps {
			if st.index >= 0 {
				parts = append(parts, fmt.Sprintf("[%d]", st.index))
			} else {
				parts = append(parts, st.key)
			}
		}
		if got := strings.Join(parts, "|"); got != want || p.String() != in {
			t.Errorf("%q: steps %q, String %q", in, got, p.String())
		}
	}
	for _, in := range []string{"", ".a", "a.", "a..b", "a[", "a[]", "a[-1]", "a[1", "a]", "a[0]b", "a.[0]", `a["x`, `a["x"`, `a[""]`, "a[1234567890]", `a['x']`} {
		if _, err := ParsePath(in); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func TestPathLookup(t *testing.T) {
	root, err := decodeJSON([]byte(`{"hits": {"hits": [{"_id": "a"}, {"_id": 7}]}, "n": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		"hits.hits[1]._id": "7",
		"hits.total":       `hits: no key "total" in an object with keys hits`,
		"hits.hits[2]":     "hits.hits: no element [2] in a list of 2",
		"n.x":              `n: want an object with key "x", found the number 1`,
		"hits[0]":          "hits: want a list for [0], found an object with keys hits",
	} {
		p, _ := ParsePath(path)
		v, err := p.Lookup(root)
		got := fmt.Sprint(v)
		if err != nil {
			got = err.Error()
		}
		if got != want {
			t.Errorf("%s: got %q, want %q", path, got, want)
		}
	}
}

// TestResultsOptional: with results_optional, a missing last key or a null
// list is an answer without hits; anything else is still a shape error.
func TestResultsOptional(t *testing.T) {
	for _, optional := range []bool{false, true} {
		file := fmt.Sprintf("url: http://x/s\nresults: root.children\nid: id\nresults_optional: %v\n", optional)
		c, err := Parse("r.yaml", []byte(file), noEnv)
		if err != nil {
			t.Fatal(err)
		}
		for answer, emptyWhenOptional := range map[string]bool{
			`{"root": {"fields": {"totalCount": 0}}}`: true,
			`{"root": {"children": null}}`:            true,
			`{"root": {"children": []}}`:              true,
			`{"toot": {}}`:                            false,
			`{"root": []}`:                            false,
			`{"root": {"children": {}}}`:              false,
		} {
			root, err := decodeJSON([]byte(answer))
			if err != nil {
				t.Fatal(err)
			}
			hits, se := c.hitsAt(root, 10)
			empty := se == nil && hits != nil && len(hits) == 0
			want := emptyWhenOptional && optional || answer == `{"root": {"children": []}}`
			if empty != want {
				t.Errorf("results_optional %v, answer %s: hits %v, error %v", optional, answer, hits, se)
			}
		}
	}
}
