package corpus

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func write(t *testing.T, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func gz(t *testing.T, s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func readAll(path string) ([]Doc, error) {
	r, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []Doc
	for {
		d, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, d)
	}
}

const good = `{"doc_id": "d1", "title": "One", "text": "first text", "url": "https://x"}

{"_id": "beir-2", "title": "Two", "text": "second"}
{"id": 3, "text": "no title"}
{"id": "4", "title": null}
  {"doc_id": "d5", "_id": "ignored", "text": "doc_id wins"}
`

var goodDocs = []Doc{
	{ID: "d1", Title: "One", Text: "first text"},
	{ID: "beir-2", Title: "Two", Text: "second"},
	{ID: "3", Text: "no title"},
	{ID: "4"},
	{ID: "d5", Text: "doc_id wins"},
}

func TestRead(t *testing.T) {
	for name, content := range map[string][]byte{
		"corpus.jsonl":    []byte(good),
		"corpus.jsonl.gz": gz(t, good),
		"named-plain.gz":  []byte(good), // the content decides, not the name
	} {
		docs, err := readAll(write(t, name, content))
		if err != nil || !reflect.DeepEqual(docs, goodDocs) {
			t.Errorf("%s: %+v, %v", name, docs, err)
		}
	}
}

func TestReadErrors(t *testing.T) {
	for _, c := range []struct {
		content string
		want    string
	}{
		{`{"doc_id": "a"}` + "\nnot json\n", "c.jsonl:2: not a JSON object"},
		{`{"title": "t"}`, "c.jsonl:1: no document id: want a doc_id, _id or id key"},
		{`{"doc_id": ""}`, `c.jsonl:1: key "doc_id": empty document id`},
		{`{"doc_id": null}`, `c.jsonl:1: key "doc_id": want a non-empty string or an integer, got null`},
		{`{"_id": {"a": 1}}`, `c.jsonl:1: key "_id": want a non-empty string or an integer, got {"a": 1}`},
		{`{"id": 1.5}`, `c.jsonl:1: key "id": want a non-empty string or an integer, got 1.5`},
		{`{"doc_id": "a", "title": 7}`, `c.jsonl:1: key "title": want a string, got number`},
		{`["a"]`, "c.jsonl:1: not a JSON object"},
		{`{"doc_id": "a"}` + "\n\n" + `{"doc_id": "b"}` + "\n" + `{"id": "a"}`, `c.jsonl:4: document id "a" already on line 1`},
	} {
		_, err := readAll(write(t, "c.jsonl", []byte(c.content)))
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, ErrBadInput) {
			t.Errorf("%q: %v, want ...%q (ErrBadInput)", c.content, err, c.want)
		}
	}
	truncated := gz(t, strings.Repeat(`{"doc_id": "a"}`+"\n", 1))
	_, err := readAll(write(t, "t.jsonl.gz", truncated[:len(truncated)-6]))
	if !errors.Is(err, ErrBadInput) {
		t.Errorf("truncated gzip: %v, want ErrBadInput", err)
	}
	long := write(t, "long.jsonl", []byte(`{"doc_id": "a"}`+"\n"+`{"doc_id": "b", "text": "`+strings.Repeat("x", MaxLineBytes)+`"}`+"\n"))
	if _, err := readAll(long); err == nil || !strings.Contains(err.Error(), "long.jsonl:2: line longer than") {
		t.Errorf("long line: %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want os.ErrNotExist", err)
	}
}

func TestDigest(t *testing.T) {
	a, err := Digest(write(t, "a", []byte(good)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Digest(write(t, "b", []byte(good)))
	c, _ := Digest(write(t, "c", []byte(good+"\n")))
	if a != b || a == c || len(a) != 64 {
		t.Fatalf("digests %s %s %s", a, b, c)
	}
}

func FuzzParseLine(f *testing.F) {
	for _, s := range strings.Split(good, "\n") {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"id": -0}`))
	f.Add([]byte(`{"doc_id": "\u0000"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseLine(b)
		if err == nil && d.ID == "" {
			t.Fatalf("%q: accepted with an empty id", b)
		}
	})
}
