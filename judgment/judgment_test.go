package judgment

import (
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evalgate/evalgate/schema"
)

const good = `{"query_id": "q1", "doc_id": "d7", "grade": 2, "model": "m", "prompt_sha256": "abc", "reason": "partly"}
{"query_id": "q1", "doc_id": "d3", "grade": 0, "model": "m", "prompt_sha256": "abc"}

{"query_id": "q2", "doc_id": "d1", "grade": 3, "model": "m", "prompt_sha256": "abc", "human_grade": 2}
{"query_id": "q1", "doc_id": "d7", "grade": 2, "model": "m", "prompt_sha256": "abc"}
`

func TestReadWrite(t *testing.T) {
	var s Set
	if err := s.Read("j.jsonl", strings.NewReader(good)); err != nil {
		t.Fatal(err)
	}
	if len(s.Judgments) != 3 || s.Repeats != 1 || s.Judgments[0].Reason != "partly" || !s.Judgments[2].Rejudged() || *s.Judgments[2].HumanGrade != 2 {
		t.Fatalf("set %+v", s)
	}
	var b bytes.Buffer
	if err := Write(&b, s.Judgments); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"doc_id":"d3"`) || !strings.Contains(lines[2], `"human_grade":2`) {
		t.Fatalf("written, sorted by query and doc:\n%s", b.String())
	}
	var again Set
	if err := again.Read("again.jsonl", &b); err != nil || len(again.Judgments) != 3 {
		t.Fatalf("read back: %v %+v", err, again)
	}
}

func TestReadErrorsNameFileLineAndField(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{`{"query_id": "q1", "doc_id": "d1"}`, `j.jsonl:1: field "grade"`},
		{`{"query_id": "q1", "doc_id": "d1", "grade": 1.5}`, `j.jsonl:1: field "grade"`},
		{`{"query_id": "q1", "doc_id": "d1", "grade": "2"}`, `j.jsonl:1: field "grade"`},
		{`{"query_id": "", "doc_id": "d1", "grade": 2}`, `j.jsonl:1: field "query_id"`},
		{`{"query_id": "q1", "doc_id": 7, "grade": 2}`, `j.jsonl:1: field "doc_id"`},
		{"not json", "j.jsonl:1: invalid JSON"},
		{"{\"query_id\": \"q1\", \"doc_id\": \"d1\", \"grade\": 2}\n{\"query_id\": \"q1\", \"doc_id\": \"d1\", \"grade\": 3}",
			`j.jsonl:2: field "grade": duplicate: query "q1" doc "d1" has grade 3 here and 2 at j.jsonl:1`},
	} {
		var s Set
		err := s.Read("j.jsonl", strings.NewReader(c.text))
		if !schema.IsInvalidInput(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an input error with %q", c.text, err, c.want)
		}
	}
}

func TestReadGzipFile(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(good))
	zw.Close()
	p := filepath.Join(dir, "j.jsonl.gz")
	os.WriteFile(p, b.Bytes(), 0o644)
	var s Set
	if err := s.ReadFile(p); err != nil || len(s.Judgments) != 3 {
		t.Fatalf("gzip: %v %+v", err, s)
	}
	os.WriteFile(p, b.Bytes()[:b.Len()/2], 0o644)
	var cut Set
	if err := cut.ReadFile(p); !errors.Is(err, schema.ErrCorrupt) || !strings.Contains(err.Error(), "ends early") || !strings.Contains(err.Error(), p) {
		t.Fatalf("a truncated gzip file: %v", err)
	}
}

func FuzzParseLine(f *testing.F) {
	for _, line := range strings.Split(good, "\n") {
		f.Add([]byte(line))
	}
	f.Add([]byte(`{"query_id": "q", "doc_id": "d", "grade": 99999999999999999999}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		j, field, err := parseLine(line)
		if err == nil && (j.QueryID == "" || j.DocID == "" || field != "") {
			t.Fatalf("accepted %q as %+v", line, j)
		}
	})
}
