package schema

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/memory"
)

// Fuzz targets for every reader. Run one with, for example,
//
//	go test ./schema -run XXX -fuzz FuzzQrels -fuzztime 20s
//
// Without -fuzz they run their seed corpus as ordinary tests.

// fuzzRead opens path and drains it without the checks of drain (which
// assume well-formed batches are the only outcome): it returns the rows
// and the error that ended reading.
func fuzzRead(t *testing.T, path string, role Role, opts Options) (*contents, error) {
	t.Helper()
	r, err := Open(context.Background(), path, role, opts)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	c := &contents{}
	for {
		b, err := r.Next(context.Background())
		if err == io.EOF {
			return c, nil
		}
		if err != nil {
			return c, err
		}
		appendBatch(t, c, b)
		b.Release()
	}
}

// checkFuzzError checks that a reader's error is an input error, or an
// I/O error from the file system.
func checkFuzzError(t *testing.T, err error) {
	t.Helper()
	if err == nil || IsInvalidInput(err) {
		return
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return
	}
	t.Fatalf("error %v (%T) is neither an input error nor an I/O error", err, err)
}

// checkRows checks what every successful read guarantees: ids non-empty
// and valid UTF-8, scores finite, positions increasing.
func checkRows(t *testing.T, c *contents) {
	t.Helper()
	id := func(what, s string) {
		if s == "" || !utf8.ValidString(s) {
			t.Fatalf("%s %q: empty or invalid UTF-8", what, s)
		}
	}
	score := func(f float64) {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			t.Fatalf("score %v", f)
		}
	}
	last := int64(0)
	pos := func(p int64) {
		if p <= last {
			t.Fatalf("position %d after %d", p, last)
		}
		last = p
	}
	for _, r := range c.GoldLong {
		id("query id", r.QID)
		id("doc id", r.Doc)
		pos(r.Pos)
	}
	for _, r := range c.RunLong {
		id("query id", r.QID)
		id("doc id", r.Doc)
		score(r.Score)
		pos(r.Pos)
	}
	for _, r := range c.GoldList {
		id("query id", r.QID)
		for _, d := range r.Docs {
			id("doc id", d)
		}
		if !utf8.ValidString(r.Query) {
			t.Fatalf("query text %q", r.Query)
		}
		for _, tag := range r.Tags {
			if !utf8.ValidString(tag) || strings.HasPrefix(tag, "=") {
				t.Fatalf("tag %q", tag)
			}
		}
		pos(r.Pos)
	}
	for _, r := range c.RunList {
		id("query id", r.QID)
		for _, d := range r.Docs {
			id("doc id", d)
		}
		for _, s := range r.Scores {
			score(s)
		}
		pos(r.Pos)
	}
}

// fuzzText reads data as a text file of the given format and role, once
// in one block and once in tiny blocks parsed in parallel. Both must give
// the same rows and the same errors (unless the data is gzip, whose read
// errors are reported at the start of the block that hit them).
func fuzzText(t *testing.T, p string, data []byte, format Format, role Role) {
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	small := 1 + len(data)%29
	c1, err1 := fuzzRead(t, p, role, Options{Format: format, Parallelism: 1})
	// Small blocks, each decoded into the memory of blocks released
	// before it.
	c2, err2 := fuzzRead(t, p, role, Options{Format: format, Parallelism: 3, BlockSize: small, MaxErrors: 3, ReuseMemory: true})
	checkFuzzError(t, err1)
	checkFuzzError(t, err2)
	if err1 == nil {
		checkRows(t, c1)
		if lines := int64(strings.Count(string(data), "\n") + 1); c1.rows() > 0 {
			var lastPos int64
			switch {
			case len(c1.GoldLong) > 0:
				lastPos = c1.GoldLong[len(c1.GoldLong)-1].Pos
			case len(c1.RunLong) > 0:
				lastPos = c1.RunLong[len(c1.RunLong)-1].Pos
			case len(c1.GoldList) > 0:
				lastPos = c1.GoldList[len(c1.GoldList)-1].Pos
			default:
				lastPos = c1.RunList[len(c1.RunList)-1].Pos
			}
			if lastPos > lines && !strings.HasPrefix(string(data), "\x1f\x8b") {
				t.Fatalf("row at line %d of %d", lastPos, lines)
			}
		}
	}
	if strings.HasPrefix(string(data), "\x1f\x8b") {
		return
	}
	if (err1 == nil) != (err2 == nil) {
		t.Fatalf("one block: %v; small blocks: %v", err1, err2)
	}
	if err1 == nil {
		c1.Batches, c2.Batches = 0, 0
		equal(t, "rows in small blocks", c2, c1)
		return
	}
	// The first errors agree, and so does the count.
	e1, e2 := inputErrors(t, err1), inputErrors(t, err2)
	for i := 0; i < len(e2); i++ {
		if e1[i].Error() != e2[i].Error() {
			t.Fatalf("error %d: %q vs %q", i, e1[i], e2[i])
		}
	}
	n1, n2 := 1, 1
	var l *ErrorList
	if errors.As(err1, &l) {
		n1 = l.Len()
	}
	if errors.As(err2, &l) {
		n2 = l.Len()
	}
	if n1 != n2 {
		t.Fatalf("%d errors vs %d", n1, n2)
	}
}

func addTextSeeds(f *testing.F, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	// And gzipped, whole and cut.
	for _, s := range seeds[:min(3, len(seeds))] {
		gz := gzipBytes(f, []byte(s))
		f.Add(gz)
		f.Add(gz[:len(gz)/2])
	}
}

func FuzzQrels(f *testing.F) {
	addTextSeeds(f,
		"301 0 FR940202-2-00150 1\n301 0 FR940202-2-00151 0\n",
		"# c\n\nq1\t0\tmsmarco_v2.1_doc_50_2286987788#13_3087841662\t2\r\nq1 0 d2 x\n",
		"q1 0 d1\nq1 Q0 d1 1 2.5 tag\nq\xff 0 d 1\n q1 0 d 99999999999\n",
		"q1 0 d1 1",
		"",
		"\r\n\r\n#\n",
		strings.Repeat("q 0 d -1\nbad\n", 40),
		"\xef\xbb\xbf301 0 d1 1\n\xef\xbb\xbf302 0 d2 x\n",
		"\xff\rq 0 d 1\rq 0 d 1\rq 0 d 1\rq 0 d 1\rq 0 d 1\n", // a CR-looking first block, then an LF
	)
	p := filepath.Join(f.TempDir(), "in.qrels") // iterations of a process run one at a time
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzText(t, p, data, FormatTREC, RoleGold)
	})
}

func FuzzTRECRun(f *testing.F) {
	addTextSeeds(f,
		"301 Q0 FR940202-2-00150 1 2.129133 STANDARD\n301 Q0 d2 2 -0.5 STANDARD extra\n",
		"q Q0 d x 1e-3 t\nq Q0 d 1 NaN t\nq Q0 d 1 1e400 t\nq 0 d 1\n",
		"#\n\tq\tQ0\td#1\t1\t+7.25\tt\r\n",
		"q Q0 d 1 0x1p-2 t\nq Q0 d 1 1_000 t\nq Q0 d 1 .5 t\n",
		strings.Repeat("q Q0 d 1 2 t\nq Q0 d 1 inf t\n", 40),
		"\xef\xbb\xbf\xef\xbb\xbf q Q0 d 1 2 t\n",
	)
	p := filepath.Join(f.TempDir(), "in.run") // iterations of a process run one at a time
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzText(t, p, data, FormatTREC, RoleRun)
	})
}

func FuzzJSONLGold(f *testing.F) {
	addTextSeeds(f,
		`{"query_id": "q1", "query": "what", "relevant_ids": ["d1", "d2"], "tags": {"lang": ["en", "de"], "category": "policy"}}`+"\n"+
			`{"qid": 7, "relevance_map": {"d9": 2, "d3": 0}, "difficulty": "hard"}`+"\n",
		`{"id": "q3", "relevantDocs": [{"id": "a", "grade": 3}, {"doc_id": "b", "relevance": true}, {"_id": 5}]}`+"\n",
		`{"query_id": "", "relevant_ids": [""]}`+"\n"+`[1]`+"\n"+`null`+"\n"+`{"query_id": "q", "qrels": {"d": null}}`+"\n",
		`{"query_id": "q", "relevant_ids": ["d"], "relevance_map": {"d": 1}, "tags": {"a=b": 1}}`+"\n{",
		`{"query_id": "q", "relevant_ids": ["d"], "tags": {"t": [[1]]}, "tier": 1.5}`,
		"\xef\xbb\xbf{}\n",
		"\xef\xbb\xbf"+`{"query_id": "q", "qid": "q", "id": 1, "relevant_ids": ["d"], "relevantDocs": [{"id": "d", "doc_id": "e"}], "category": "a", "tags": {"category": ["a", "b"]}}`+"\n",
	)
	p := filepath.Join(f.TempDir(), "in.jsonl") // iterations of a process run one at a time
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzText(t, p, data, FormatJSONL, RoleGold)
	})
}

func FuzzJSONLRun(f *testing.F) {
	addTextSeeds(f,
		`{"query_id": "q1", "retrieved_ids": ["d3", "d1"]}`+"\n"+
			`{"qid": "q2", "retrievedDocs": [{"id": "d3", "score": 12.5}, {"id": "d9", "score": -1e-3}]}`+"\n",
		`{"id": 3, "retrievedDocIds": ["a", 5], "scores": [0.5, 25]}`+"\n"+`{"query_id": "q4", "retrieved": []}`+"\n",
		`{"query_id": "q", "retrieved_ids": ["a"], "scores": [1e400]}`+"\n"+`{"query_id": "q", "retrieved_ids": [{"id": "a", "score": 1}, {"id": "b"}]}`+"\n",
		`{"query_id": "q", "retrieved_doc_ids": [{"doc_id": "x"}, {"_id": "y", "score": null}]}`+"\n"+`{"query_id": "q", "retrieved_ids": [""], "scores": null}`,
		`{"query_id": "q", "retrieved_ids": ["a", "b"], "scores": [1]}`+"\r\n# c\n",
		"\xef\xbb\xbf"+`{"qid": "q", "id": "q", "retrieved_ids": ["a"], "retrievedDocs": [ "a" ], "retrieved": [{"_id": "b", "id": "b", "score": 1}]}`+"\n",
	)
	p := filepath.Join(f.TempDir(), "in.jsonl") // iterations of a process run one at a time
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzText(t, p, data, FormatJSONL, RoleRun)
	})
}

// columnarSeeds returns valid files of every form in the given formats.
func columnarSeeds(t testing.TB, formats ...Format) [][]byte {
	mem := memory.NewGoAllocator()
	var out [][]byte
	for _, tc := range []struct {
		s         *arrow.Schema
		rows      string
		arrowOnly bool // Parquet has no run-end encoding and no views
	}{
		{GoldLong(), `[{"query_id": "q1", "doc_id": "d1", "grade": 2}, {"query_id": "q1", "doc_id": "d2", "grade": 0}]`, false},
		{RunLong(), `[{"query_id": "q1", "doc_id": "d1", "score": 2.5, "rank": 1}, {"query_id": "q1", "doc_id": "d2", "score": -1, "rank": null}]`, false},
		{RunLongEncoded(), `[{"query_id": "q1", "doc_id": "d1", "score": 2.5, "rank": 1}, {"query_id": "q1", "doc_id": "d2", "score": -1, "rank": null},
		  {"query_id": "q2", "doc_id": "d1", "score": 1, "rank": 1}]`, true},
		{GoldList(), `[{"query_id": "q1", "query": "what", "doc_ids": ["d1", "d2"], "grades": [2, 0], "tags": [{"key": "category", "value": "policy"}]},
		  {"query_id": "q2", "query": null, "doc_ids": [], "grades": [], "tags": null}]`, false},
		{RunList(), `[{"query_id": "q1", "doc_ids": ["d3", "d1"], "scores": [1.5, 0.5]}, {"query_id": "q2", "doc_ids": ["x"], "scores": null}]`, false},
		{arrow.NewSchema([]arrow.Field{{Name: "qid", Type: arrow.BinaryTypes.LargeString}, fDocID,
			{Name: "relevance", Type: arrow.PrimitiveTypes.Int64}}, nil),
			`[{"qid": "q1", "doc_id": "d1", "relevance": 3}, {"qid": "q1", "doc_id": "", "relevance": null}]`, false},
		{arrow.NewSchema([]arrow.Field{{Name: FieldQueryID, Type: arrow.BinaryTypes.StringView}, {Name: FieldDocID, Type: arrow.BinaryTypes.StringView},
			{Name: FieldScore, Type: arrow.PrimitiveTypes.Float64}}, nil), // as polars writes them
			`[{"query_id": "q1", "doc_id": "d1", "score": 2}, {"query_id": "q1", "doc_id": "a-doc-id-longer-than-twelve-bytes", "score": 1}]`, true},
	} {
		recs := recordsFromJSON(t, mem, tc.s, tc.rows)
		for _, format := range formats {
			if tc.arrowOnly && format == FormatParquet {
				continue
			}
			out = append(out, encode(t, format, tc.s, recs))
		}
		release(recs)
	}
	return out
}

// fuzzColumnar reads data as a file of each format and role: no panic, no
// crash, and any error an input error.
func fuzzColumnar(t *testing.T, p string, data []byte, formats ...Format) {
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range formats {
		for _, role := range []Role{RoleGold, RoleRun} {
			c, err := fuzzRead(t, p, role, Options{Format: format})
			checkFuzzError(t, err)
			if err == nil {
				checkRows(t, c)
			}
			// Decoding into the memory of released batches reads the same.
			reused, rerr := fuzzRead(t, p, role, Options{Format: format, ReuseMemory: true})
			if (err == nil) != (rerr == nil) || (err == nil && !reflect.DeepEqual(c, reused)) {
				t.Fatalf("%s with ReuseMemory: %v, without: %v, or contents differ", role, rerr, err)
			}
		}
		if _, err := DetectRole(p, format); err != nil && !IsInvalidInput(err) && !strings.Contains(err.Error(), "cannot tell") {
			t.Fatalf("DetectRole: %v (%T)", err, err)
		}
	}
}

func FuzzArrowIPC(f *testing.F) {
	for _, s := range columnarSeeds(f, FormatArrow, FormatArrowStream) {
		f.Add(s)
		f.Add(s[:len(s)/2])
	}
	f.Add([]byte("ARROW1\x00\x00ARROW1"))
	f.Add([]byte("\xff\xff\xff\xff\x00\x00\x00\x00"))
	p := filepath.Join(f.TempDir(), "in")
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzColumnar(t, p, data, FormatArrow, FormatArrowStream)
	})
}

func FuzzParquet(f *testing.F) {
	for _, s := range columnarSeeds(f, FormatParquet) {
		f.Add(s)
	}
	// The long run form compressed, for the page decompression path.
	mem := memory.NewGoAllocator()
	recs := recordsFromJSON(f, mem, RunLong(), `[{"query_id": "q1", "doc_id": "d1", "score": 2.5, "rank": 1}, {"query_id": "q1", "doc_id": "d2", "score": -1, "rank": null}]`)
	for _, codec := range []string{"snappy", "zstd"} {
		var buf bytes.Buffer
		w, err := NewRecordWriterWith(&buf, FormatParquet, RunLong(), WriterOptions{Compression: codec})
		if err != nil {
			f.Fatal(err)
		}
		writeAll(f, w, recs...)
		f.Add(buf.Bytes())
	}
	release(recs)
	f.Add([]byte("PAR1\x00\x00\x00\x00PAR1"))
	p := filepath.Join(f.TempDir(), "in")
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzColumnar(t, p, data, FormatParquet)
	})
}
