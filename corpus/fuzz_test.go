package corpus

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// Fuzz targets for the line parsers. Run one with, for example,
//
//	go test ./corpus -run XXX -fuzz FuzzJSONLLine -fuzztime 30s
//
// Without -fuzz they run their seed corpus as ordinary tests.

var jsonlSeeds = []string{
	`{"_id": "d1", "title": "t", "text": "x"}`,
	`{"id": 12, "contents": "x", "title": null}`,
	`{"doc_id": "a", "id": "a", "body": "b", "text": "b"}`,
	`{"id": "a\u0000", "text": "\ud800"}`,
	`{"id": "", "text": "x"}`,
	`{"id": {}, "text": 1}`,
	`{"id": "a", "text": "x", "title": [1]}`,
	`{"id": "a"`,
	`[]`, `null`, `"s"`, `{}`, `# comment`, "{\"id\": \"\xff\"}",
}

// FuzzJSONLLine checks that a JSONL line either parses into a document
// with a non-empty id whose strings decode to valid UTF-8, or is refused
// with a cause; never a panic.
func FuzzJSONLLine(f *testing.F) {
	for _, s := range jsonlSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, l []byte) {
		d, le := parseJSONLLine(l)
		if le != nil {
			if le.err == nil || le.col < 0 || le.col > len(l)+1 {
				t.Fatalf("error %+v", le)
			}
			return
		}
		if len(d.id) == 0 {
			t.Fatal("empty id accepted")
		}
		doc, le := d.decode()
		if le != nil {
			t.Fatalf("checked line does not decode: %v", le.err)
		}
		if utf8.Valid(l) && !(utf8.ValidString(doc.ID) && utf8.ValidString(doc.Text) && utf8.ValidString(doc.Title)) {
			t.Fatalf("invalid UTF-8 from a valid line: %+v", doc)
		}
		// The block parser finds it when wanted, on its line.
		if !utf8.Valid(l) || bytes.ContainsAny(l, "\n\r") || isBlank(l) || l[0] == '#' {
			return
		}
		res := parseBlock("f", l, true, jsonlParser{}, wantSet{doc.ID: {}}, 10)
		if len(res.errs) != 0 || len(res.found) != 1 || res.found[0].doc != doc || res.found[0].pos != 1 || res.docs != 1 {
			t.Fatalf("block: %+v, want %+v", res, doc)
		}
	})
}

// FuzzTSVLine checks that a TSV line either splits into fields that
// rebuild the line, with a non-empty id, or is refused; never a panic.
func FuzzTSVLine(f *testing.F) {
	for _, s := range []string{"1\tx", "1\tx\tt", "id\ttext", "\tx", "1", "1\t\t", "1\ta\tb\tc", "a b\tc d\t"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, l []byte) {
		id, text, title, le := parseTSVLine(l)
		if le != nil {
			if le.err == nil {
				t.Fatalf("error %+v", le)
			}
			return
		}
		rebuilt := string(id) + "\t" + string(text)
		if title != nil {
			rebuilt += "\t" + string(title)
		}
		if len(id) == 0 || rebuilt != string(l) || bytes.IndexByte(text, '\t') >= 0 {
			t.Fatalf("%q split into %q %q %q", l, id, text, title)
		}
	})
}

// FuzzParseBlock checks the block parsers on whole blocks: every line is
// counted, errors name lines of the block, documents found are wanted and
// valid; never a panic.
func FuzzParseBlock(f *testing.F) {
	f.Add(false, []byte("id\ttext\n1\tone\n\n2\ttwo\tT\r\nbad\n"))
	f.Add(true, []byte(strings.Join(jsonlSeeds, "\n")))
	f.Fuzz(func(t *testing.T, jsonl bool, data []byte) {
		var p lineParser = tsvParser{}
		if jsonl {
			p = jsonlParser{}
		}
		want := wantSet{"1": {}, "2": {}, "d1": {}, "a": {}, "12": {}}
		res := parseBlock("f", data, true, p, want, 1000)
		lines := int64(bytes.Count(data, []byte{'\n'}))
		if len(data) > 0 && data[len(data)-1] != '\n' {
			lines++
		}
		if res.lines != lines {
			t.Fatalf("%d lines counted, want %d", res.lines, lines)
		}
		for _, e := range res.errs {
			if e.Line < 1 || e.Line > lines || e.Err == nil {
				t.Fatalf("error %v", e)
			}
		}
		for _, fd := range res.found {
			if !want.has([]byte(fd.doc.ID)) || fd.pos < 1 || fd.pos > lines || !utf8.ValidString(fd.doc.Text) {
				t.Fatalf("found %+v", fd)
			}
		}
		if int64(len(res.found)) > res.docs || res.docs+int64(len(res.errs)) > lines {
			t.Fatalf("%d found, %d docs, %d errors, %d lines", len(res.found), res.docs, len(res.errs), lines)
		}
	})
}

// FuzzScanMembers checks scanMembers against encoding/json: on valid JSON
// it finds the same values for the keys it looks for as decoding into a
// map does, and refuses what is not an object.
func FuzzScanMembers(f *testing.F) {
	for _, s := range jsonlSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{
		`{"id": "a", "id": "b"}`, `{"\u0069d": 1, "te\"xt": "x", "text": "a\"b\\"}`,
		` { "title" : [ "]" , {"}": "{"} ] , "body":-1.5e3 } `, `{"a":{"id":"inner"},"id":"outer"}`,
		`[{"id": "a"}]`, `true`, `12`, "{\"id\":\t\"x\"\n}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, l []byte) {
		if !json.Valid(l) {
			return
		}
		m, ok := scanMembers(l)
		var o map[string]json.RawMessage
		err := json.Unmarshal(l, &o)
		if err != nil || o == nil {
			if ok {
				t.Fatalf("%q: scanned as an object, json: %v", l, err)
			}
			return
		}
		if !ok {
			t.Fatalf("%q: not scanned, json decodes %v", l, o)
		}
		for i, k := range memberKeys {
			v, present := o[k]
			if present != (m[i] != nil) || !bytes.Equal(v, m[i]) {
				t.Fatalf("%q: key %s: scanned %q, json %q (present %v)", l, k, m[i], v, present)
			}
		}
	})
}
