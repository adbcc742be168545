package retriever

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalgate/evalgate/schema"
)

// Fuzz targets. Run one with, for example,
//
//	go test ./retriever -run XXX -fuzz FuzzParse -fuzztime 20000x
//
// Without -fuzz they run their seed corpus as ordinary tests.

// fuzzAnswer is a JSON answer paths are looked up in.
const fuzzAnswer = `{"hits": {"hits": [{"_id": "a", "_score": 1.5, "f": {"doc.id": 7}}, {"_id": 2}]},
	"data": {"Get": {"Chunk": [{"_additional": {"id": "u", "distance": 0.1}}]}}, "root": {"children": []},
	"x": [[1, [2]], {"": null}]}`

func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"hits.hits", "[0].items", `fields["doc.id"]`, "data.Get.Chunk", ".", "", "a..b", `a["x\"y"]`, "a[01]", "x[1][1][0]"} {
		f.Add(s)
	}
	root, err := decodeJSON([]byte(fuzzAnswer))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePath(s)
		if err != nil {
			if p.steps != nil || p.text != "" {
				t.Fatalf("%q: error %v with a non-zero path", s, err)
			}
			return
		}
		if p.String() != s {
			t.Fatalf("%q: String %q", s, p.String())
		}
		v, err := p.Lookup(root)
		if err != nil && v != nil {
			t.Fatalf("%q: value %v with error %v", s, v, err)
		}
		if err != nil && !strings.Contains(err.Error(), ":") {
			t.Fatalf("%q: error %q does not say where", s, err)
		}
	})
}

func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "examples", "retrievers", "*.yaml"))
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, s := range []string{
		fullFile,
		"url: http://x/s\nresults: hits\nid: id\n",
		"url: http://x/${A:-{{.K}}}$$\nresults: '[0]'\nid: .\nembed:\n  url: http://e\n  vector: data[0].embedding\nbody: '{{json .Vector}}'\n",
		"url: &u http://x/s\nresults: *u\nid: id\n",
		"a: 1\n---\nb: 2\n",
		"url: http://x/s\nresults: hits\nid: id\nid_match: '::(.+)$'\nheaders:\n  Host: h\n  X: '{{.Tags.t}}'\n",
	} {
		f.Add([]byte(s))
	}
	env := envOf(map[string]string{"A": "{{.Query}}", "SEARCH_TOKEN": "t0k", "ES_URL": "http://es:9200"})
	root, err := decodeJSON([]byte(fuzzAnswer))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("f.yaml", data, env)
		if err != nil {
			if !schema.IsInvalidInput(err) {
				t.Fatalf("error %v (%T) is not an input error", err, err)
			}
			if strings.Contains(err.Error(), "t0k") {
				t.Fatalf("error shows a secret: %v", err)
			}
			return
		}
		if string(c.Source) != string(data) {
			t.Fatal("Source differs from the file")
		}
		if strings.Contains(c.String(), "t0k") {
			t.Fatalf("String shows a secret: %s", c)
		}
		cl := &Client{cfg: c}
		q := queryData{Query: "q {{.K}} ${A}", QueryID: "id", K: c.K, Tags: map[string]string{"t": "v"}}
		if c.embed != nil {
			cl.render(c.embed, "id", q)
			cl.render(&c.search, "id", vectorData{queryData: q, Vector: sampleVector})
		} else {
			cl.render(&c.search, "id", q)
		}
		c.hitsAt(root, c.K)
	})
}

// FuzzAnswer feeds arbitrary answers to the extraction of hits and of a
// vector: an error, never a panic.
func FuzzAnswer(f *testing.F) {
	f.Add([]byte(fuzzAnswer))
	f.Add([]byte(`{"result": {"points": [{"id": 1, "score": 0.5}, {"id": "u"}]}}`))
	f.Add([]byte(`{"data": [{"embedding": [0.1, -2e-3]}]}`))
	f.Add([]byte(`[{"items": [1, 2]}]`))
	var cfgs []*Config
	for _, file := range []string{
		"url: http://x/s\nresults: hits.hits\nid: _id\nscore: _score\n",
		"url: http://x/s\nresults: result.points\nid: id\nscore: score\nid_match: '^(.+)$'\n",
		"url: http://x/s\nresults: '[0].items'\nid: .\n",
	} {
		c, err := Parse("f.yaml", []byte(file), noEnv)
		if err != nil {
			f.Fatal(err)
		}
		cfgs = append(cfgs, c)
	}
	vec, _ := ParsePath("data[0].embedding")
	embed := &request{vector: vec}
	f.Fuzz(func(t *testing.T, body []byte) {
		root, err := decodeJSON(body)
		if err != nil {
			return
		}
		for _, c := range cfgs {
			hits, se := c.hitsAt(root, 3)
			if se == nil && len(hits) > 3 {
				t.Fatalf("%d hits for k 3", len(hits))
			}
			for _, h := range hits {
				if h.ID == "" {
					t.Fatal("empty id accepted")
				}
			}
		}
		if v, se := embed.vectorAt(root); se == nil {
			if _, err := decodeJSON(v); err != nil {
				t.Fatalf("vector %s is not JSON: %v", v, err)
			}
		}
	})
}
