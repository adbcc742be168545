package corpus

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/evalgate/evalgate/schema"
)

// sampleDocs is the corpus most tests read, in every format.
var sampleDocs = []Document{
	{ID: "d1", Title: "Aaron", Text: "Aaron is a prophet, high priest, and the brother of Moses."},
	{ID: "d2", Title: "", Text: "The quick brown fox jumps over the lazy dog."},
	{ID: "d3", Title: "Naïve café", Text: "Unicode: ünïcödé, 日本語, emoji 🙂."},
	{ID: "d4", Title: "Empty", Text: ""},
	{ID: "d5", Title: "Quotes", Text: `She said "yes" \ and left.`},
}

// sampleJSONL writes sampleDocs as JSONL with a mix of the accepted keys.
func sampleJSONL() []byte {
	idKey := []string{"_id", "id", "doc_id", "docid", "_id"}
	textKey := []string{"text", "contents", "body", "text", "text"}
	var b strings.Builder
	for i, d := range sampleDocs {
		fmt.Fprintf(&b, "{%q: %q, %q: %q", idKey[i], d.ID, textKey[i], d.Text)
		if d.Title != "" {
			fmt.Fprintf(&b, ", \"title\": %q", d.Title)
		}
		b.WriteString(", \"metadata\": {\"url\": \"http://x\"}}\n")
	}
	return []byte(b.String())
}

// sampleTSV writes sampleDocs as id<TAB>text<TAB>title, with a header.
func sampleTSV(header, titles bool) []byte {
	var b strings.Builder
	if header {
		b.WriteString("id\ttext")
		if titles {
			b.WriteString("\ttitle")
		}
		b.WriteString("\n")
	}
	for _, d := range sampleDocs {
		b.WriteString(d.ID + "\t" + d.Text)
		if titles {
			b.WriteString("\t" + d.Title)
		}
		b.WriteString("\n")
	}
	return []byte(b.String())
}

func sampleParquet(t testing.TB) []byte {
	var ids, texts, titles []any
	for _, d := range sampleDocs {
		ids = append(ids, d.ID)
		texts = append(texts, d.Text)
		if d.Title == "" {
			titles = append(titles, nil)
		} else {
			titles = append(titles, d.Title)
		}
	}
	return parquetBytes(t,
		column{"_id", arrow.BinaryTypes.String, ids},
		column{"title", arrow.BinaryTypes.String, titles},
		column{"text", dictString, texts},
		column{"emb", arrow.PrimitiveTypes.Int64, []any{int64(1), int64(2), int64(3), int64(4), int64(5)}},
	)
}

// TestLoadFormats reads one corpus written in every format, plain and
// gzipped, read sequentially and in parallel blocks, and checks the
// documents found, the missing ids and the counts.
func TestLoadFormats(t *testing.T) {
	dir := t.TempDir()
	withoutTitles := func(docs []Document) []Document {
		out := make([]Document, len(docs))
		for i, d := range docs {
			out[i] = Document{ID: d.ID, Text: d.Text}
		}
		return out
	}
	files := []struct {
		name    string
		content []byte
		format  Format
		titles  bool
	}{
		{"corpus.jsonl", sampleJSONL(), FormatJSONL, true},
		{"collection.tsv", sampleTSV(false, false), FormatTSV, false},
		{"collection-titles.tsv", sampleTSV(false, true), FormatTSV, true},
		{"header.tsv", sampleTSV(true, true), FormatTSV, true},
		{"header2.tsv", sampleTSV(true, false), FormatTSV, false},
		{"corpus.parquet", sampleParquet(t), FormatParquet, true},
	}
	want := []string{"d3", "d1", "d4", "nope", "d1", "d5"}
	for _, f := range files {
		for _, gz := range []bool{false, true} {
			name, content := f.name, f.content
			if gz {
				name, content = name+".gz", gzipBytes(t, content)
			}
			path := writeFile(t, dir, name, content)
			for _, o := range textOptions {
				t.Run(name+"/"+o.name, func(t *testing.T) {
					res, err := load(t, path, o.opts, want...)
					if err != nil {
						t.Fatal(err)
					}
					docs := sampleDocs
					if !f.titles {
						docs = withoutTitles(docs)
					}
					wantDocs := map[string]Document{"d1": docs[0], "d3": docs[2], "d4": docs[3], "d5": docs[4]}
					if !reflect.DeepEqual(res.Docs, wantDocs) {
						t.Errorf("docs\n%v\nwant\n%v", res.Docs, wantDocs)
					}
					if !reflect.DeepEqual(res.Missing, []string{"nope"}) {
						t.Errorf("missing %v, want [nope]", res.Missing)
					}
					if res.Read != int64(len(sampleDocs)) || res.Duplicates != 0 || res.Format != f.format {
						t.Errorf("read %d, duplicates %d, format %v; want %d, 0, %v", res.Read, res.Duplicates, res.Format, len(sampleDocs), f.format)
					}
				})
			}
		}
	}
}

// TestLoadNothingWanted checks that with no ids wanted the corpus is still
// read and checked, and nothing is kept.
func TestLoadNothingWanted(t *testing.T) {
	dir := t.TempDir()
	res, err := load(t, writeFile(t, dir, "c.jsonl", sampleJSONL()), Options{})
	if err != nil || len(res.Docs) != 0 || len(res.Missing) != 0 || res.Read != 5 {
		t.Fatalf("got %+v, %v; want nothing kept, 5 read", res, err)
	}
	_, err = load(t, writeFile(t, dir, "bad.jsonl", []byte("{\"id\": \"a\"}\n")), Options{})
	wantInputError(t, err, "", schema.ErrMissingField, "want the passage text", 1)
}

// TestJSONLValues checks the values the JSONL keys may hold.
func TestJSONLValues(t *testing.T) {
	in := `{"id": 17, "text": "number id"}
{"id": -3.5e2, "text": "kept as written"}
{"_id": "esc\"aped\u00e9", "text": "t\tab\nnewline \ud83d\ude42", "title": null}
{"doc_id": "same", "id": "same", "text": "two aliases, one value", "contents": "two aliases, one value"}
{"id": "spaced", "text" : "white space in the line" ,  "title":"t" }
# a comment line

   
{"id": "x", "text": "", "title": ""}
`
	path := writeFile(t, t.TempDir(), "c.jsonl", []byte(in))
	res, err := load(t, path, Options{}, "17", "-3.5e2", "esc\"aped\u00e9", "same", "spaced", "x")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Document{
		"17":              {ID: "17", Text: "number id"},
		"-3.5e2":          {ID: "-3.5e2", Text: "kept as written"},
		"esc\"aped\u00e9": {ID: "esc\"aped\u00e9", Text: "t\tab\nnewline 🙂"},
		"same":            {ID: "same", Text: "two aliases, one value"},
		"spaced":          {ID: "spaced", Title: "t", Text: "white space in the line"},
		"x":               {ID: "x"},
	}
	if !reflect.DeepEqual(res.Docs, want) {
		t.Errorf("docs\n%q\nwant\n%q", res.Docs, want)
	}
	if res.Read != 6 || len(res.Missing) != 0 {
		t.Errorf("read %d, missing %v; want 6, none", res.Read, res.Missing)
	}
}

// TestJSONLErrors checks the error of each kind of bad line: its line,
// column, field, kind and text. Each bad line follows a good one, so the
// line number is 2.
func TestJSONLErrors(t *testing.T) {
	cases := []struct {
		name, line string
		col        int
		field      string
		sentinel   error
		text       string
	}{
		{"syntax", `{"id": "a", "text": }`, 21, "", nil, "invalid JSON"},
		{"truncated", `{"id": "a", "text": "b"`, 23, "", nil, "invalid JSON"},
		{"array", `["a", "b"]`, 1, "", schema.ErrTypeMismatch, "want a JSON object"},
		{"string", `"a"`, 1, "", schema.ErrTypeMismatch, "want a JSON object"},
		{"null", `null`, 1, "", schema.ErrTypeMismatch, "got null"},
		{"no id", `{"text": "b"}`, 0, "", schema.ErrMissingField, "want a document id (doc_id, docid, id, _id)"},
		{"null id", `{"id": null, "text": "b"}`, 0, "", schema.ErrMissingField, "want a document id"},
		{"empty id", `{"id": "", "text": "b"}`, 0, "id", schema.ErrEmptyID, ""},
		{"escaped empty id", `{"_id": "\u0000", "text": "b"}`, 0, "", nil, ""}, // not empty: one NUL
		{"object id", `{"id": {"a": 1}, "text": "b"}`, 0, "id", schema.ErrTypeMismatch, "want a string or number id"},
		{"bool id", `{"id": true, "text": "b"}`, 0, "id", schema.ErrTypeMismatch, "want a string or number id"},
		{"ids disagree", `{"doc_id": "a", "_id": "b", "text": "c"}`, 0, "", schema.ErrDuplicate, "both doc_id and _id, with different values"},
		{"no text", `{"id": "a", "title": "t"}`, 0, "", schema.ErrMissingField, "want the passage text (text, contents, body)"},
		{"null text", `{"id": "a", "text": null}`, 0, "", schema.ErrMissingField, "want the passage text"},
		{"number text", `{"id": "a", "text": 12}`, 0, "text", schema.ErrTypeMismatch, "want a string, got 12"},
		{"texts disagree", `{"id": "a", "text": "x", "body": "y"}`, 0, "", schema.ErrDuplicate, "both text and body"},
		{"list title", `{"id": "a", "text": "x", "title": ["t"]}`, 0, "title", schema.ErrTypeMismatch, "want a string"},
		{"invalid utf8", "{\"id\": \"a\", \"text\": \"\xff\"}", 22, "", schema.ErrInvalidUTF8, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := "{\"id\": \"ok\", \"text\": \"fine\"}\n" + c.line + "\n"
			for _, o := range textOptions {
				path := writeFile(t, t.TempDir(), "c.jsonl", []byte(in))
				_, err := load(t, path, o.opts, "a", "ok")
				if c.name == "escaped empty id" {
					if err != nil {
						t.Fatalf("%s: %v", o.name, err)
					}
					continue
				}
				wantInputError(t, err, c.field, c.sentinel, c.text, 2)
				var ie *schema.InputError
				if errors.As(err, &ie) && (ie.Column != c.col || ie.File != path) {
					t.Errorf("%s: %v: at %s column %d, want %s column %d", o.name, err, ie.File, ie.Column, path, c.col)
				}
			}
		})
	}
}

// TestTSVErrors checks the errors of bad collection.tsv lines.
func TestTSVErrors(t *testing.T) {
	cases := []struct {
		name, line string
		col        int
		field      string
		sentinel   error
		text       string
	}{
		{"one field", "12 no tab here", 1, "", schema.ErrFieldCount, "got 1 fields"},
		{"four fields", "12\ta\tb\tc", 1, "", schema.ErrFieldCount, "got 4 fields (a tab inside the text?)"},
		{"empty id", "\ttext", 1, "id", schema.ErrEmptyID, ""},
		{"invalid utf8", "12\tab\xc3(", 6, "", schema.ErrInvalidUTF8, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, o := range textOptions {
				path := writeFile(t, t.TempDir(), "c.tsv", []byte("1\tfine\n"+c.line+"\n"))
				_, err := load(t, path, o.opts, "1")
				wantInputError(t, err, c.field, c.sentinel, c.text, 2)
				var ie *schema.InputError
				if errors.As(err, &ie) && ie.Column != c.col {
					t.Errorf("%s: %v: column %d, want %d", o.name, err, ie.Column, c.col)
				}
			}
		})
	}
}

// TestTSVShapes checks header lines (skipped only as the first line),
// CR LF line ends, a byte-order mark, blank lines and empty fields.
func TestTSVShapes(t *testing.T) {
	in := "\xef\xbb\xbfid\ttext\ttitle\r\n" +
		"1\tone\tT1\r\n" +
		"\r\n" +
		"2\t\t\r\n" + // empty text and title
		"id\ttext\ttitle\r\n" + // not the first line: a document
		"#3\tnot a comment\n" +
		"4\tlast line without a line end"
	for _, o := range textOptions {
		path := writeFile(t, t.TempDir(), "c.tsv", []byte(in))
		res, err := load(t, path, o.opts, "1", "2", "id", "#3", "4")
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]Document{
			"1":  {ID: "1", Title: "T1", Text: "one"},
			"2":  {ID: "2"},
			"id": {ID: "id", Text: "text", Title: "title"},
			"#3": {ID: "#3", Text: "not a comment"},
			"4":  {ID: "4", Text: "last line without a line end"},
		}
		if !reflect.DeepEqual(res.Docs, want) || res.Read != 5 {
			t.Errorf("%s: docs %q, read %d; want %q, 5", o.name, res.Docs, res.Read, want)
		}
	}
	// The header is a header only with column names.
	path := writeFile(t, t.TempDir(), "c.tsv", []byte("pid\tpassage\n"))
	if res, err := load(t, path, Options{}, "pid"); err != nil || len(res.Docs) != 0 || res.Read != 0 {
		t.Errorf("pid/passage header: %+v, %v; want a header", res, err)
	}
	path = writeFile(t, t.TempDir(), "c.tsv", []byte("id\tsomething\n"))
	if res, err := load(t, path, Options{}, "id"); err != nil || len(res.Docs) != 1 {
		t.Errorf("id/something: %+v, %v; want a document", res, err)
	}
}

// TestDuplicates checks repeated ids: identical repeats of a wanted
// document are counted, different ones are an error naming both lines (or
// rows), and repeats of other ids are not looked at.
func TestDuplicates(t *testing.T) {
	dir := t.TempDir()
	tsv := "1\tone\n2\ttwo\n1\tone\n3\tthree\n3\tTHREE\n1\tone\n9\tx\n9\ty\n"
	for _, o := range textOptions {
		path := writeFile(t, dir, "dup.tsv", []byte(tsv))
		res, err := load(t, path, o.opts, "1", "2")
		if err != nil {
			t.Fatalf("%s: %v", o.name, err)
		}
		if res.Duplicates != 2 || res.Read != 8 || res.Docs["1"].Text != "one" {
			t.Errorf("%s: duplicates %d, read %d, doc %v; want 2, 8, one", o.name, res.Duplicates, res.Read, res.Docs["1"])
		}
		_, err = load(t, path, o.opts, "3")
		wantInputError(t, err, "id", schema.ErrDuplicate, `document "3" is also at line 4, with a different text`, 5)
	}
	jsonl := `{"id": "a", "text": "x", "title": "t"}
{"_id": "a", "text": "x", "title": "u"}
{"id": "b", "text": "x"}
{"id": "b", "text": "y", "title": "z"}
`
	path := writeFile(t, dir, "dup.jsonl", []byte(jsonl))
	_, err := load(t, path, Options{}, "a", "b")
	wantInputError(t, err, "_id", schema.ErrDuplicate, `also at line 1, with a different title`, 2, 4)
	if !strings.Contains(err.Error(), `document "b" is also at line 3, with a different title and text`) {
		t.Errorf("error %v does not name line 3 for b", err)
	}
	pq := parquetBytes(t,
		column{"id", arrow.BinaryTypes.String, []any{"a", "b", "a", "a"}},
		column{"text", arrow.BinaryTypes.String, []any{"x", "y", "x", "z"}},
	)
	_, err = load(t, writeFile(t, dir, "dup.parquet", pq), Options{}, "a")
	wantInputError(t, err, "id", schema.ErrDuplicate, `document "a" is also at row 1, with a different text`, 4)
}

// TestManyErrors checks that every bad line of a file is reported, the
// first MaxErrors in full and the rest counted, whatever the blocks.
func TestManyErrors(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 40; i++ {
		if i%4 == 0 {
			fmt.Fprintf(&b, "bad line %d\n", i)
		} else {
			fmt.Fprintf(&b, "%d\ttext %d\n", i, i)
		}
	}
	for _, o := range textOptions {
		o.opts.MaxErrors = 3
		path := writeFile(t, t.TempDir(), "c.tsv", []byte(b.String()))
		_, err := load(t, path, o.opts, "1")
		wantInputError(t, err, "", schema.ErrFieldCount, "", 4, 8, 12)
		var el *schema.ErrorList
		if !errors.As(err, &el) || el.Len() != 10 || !strings.HasSuffix(err.Error(), "(and 7 more errors)") {
			t.Errorf("%s: %v: want 10 errors, 3 shown", o.name, err)
		}
	}
}

// TestLineEnds checks CR-only line ends and an over-long line.
func TestLineEnds(t *testing.T) {
	path := writeFile(t, t.TempDir(), "mac.tsv", []byte("1\tone\r2\ttwo\r"))
	_, err := load(t, path, Options{}, "1")
	wantInputError(t, err, "", schema.ErrLineEnds, "CR only")
	// A CR inside a first line longer than a block is not a line end: the
	// file has LFs, and the answer must not depend on the block size.
	text := []byte("1\tone\rtwo three four\n2\ttwo\n")
	path = writeFile(t, t.TempDir(), "cr-in-text.tsv", text)
	for _, bs := range []int{4, 1 << 20} {
		if _, err := load(t, path, Options{BlockSize: bs}, "1"); errors.Is(err, schema.ErrLineEnds) {
			t.Errorf("block size %d: %v", bs, err)
		}
	}
}

// TestGzipBroken checks that a gzipped corpus cut short or followed by
// other data is an input error saying so, in every format.
func TestGzipBroken(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []struct {
		name    string
		content []byte
	}{
		{"c.jsonl.gz", gzipBytes(t, []byte(strings.Repeat(string(sampleJSONL()), 50)))},
		{"c.tsv.gz", gzipBytes(t, []byte(strings.Repeat(string(sampleTSV(false, true)), 50)))},
		{"c.parquet.gz", gzipBytes(t, sampleParquet(t))},
	} {
		format := formatFromExtension(f.name)
		cut := writeFile(t, dir, "cut-"+f.name, f.content[:len(f.content)*2/3])
		_, err := load(t, cut, Options{Format: format}, "d1")
		wantInputError(t, err, "", schema.ErrCorrupt, "the gzip stream ends early")
		trailing := writeFile(t, dir, "trailing-"+f.name, append(append([]byte{}, f.content...), "garbage"...))
		_, err = load(t, trailing, Options{Format: format}, "d1")
		wantInputError(t, err, "", schema.ErrCorrupt, fmt.Sprintf("trailing data after the gzip stream, at byte %d", len(f.content)))
		var ie *schema.InputError
		if errors.As(err, &ie) && ie.File != trailing {
			t.Errorf("error names %s, want %s", ie.File, trailing)
		}
	}
	// Corrupt deflate data: an input error naming the file.
	good := gzipBytes(t, []byte(strings.Repeat(string(sampleTSV(false, true)), 50)))
	for i := len(good) / 3; i < len(good)/3+16; i++ {
		good[i] ^= 0x55
	}
	corrupt := writeFile(t, dir, "corrupt.tsv.gz", good)
	_, err := load(t, corrupt, Options{}, "d1")
	var ie *schema.InputError
	if !errors.As(err, &ie) || ie.File != corrupt {
		t.Errorf("corrupt deflate: %v; want an input error naming %s", err, corrupt)
	}
	// A bad header.
	bad := writeFile(t, dir, "bad.tsv.gz", []byte{0x1f, 0x8b, 0, 0, 0})
	_, err = load(t, bad, Options{}, "d1")
	wantInputError(t, err, "", schema.ErrCorrupt, "")
}

// TestContentHash checks the hash against values computed outside Go,
// from its definition spelled out byte by byte: the judgment cache
// depends on it not changing.
func TestContentHash(t *testing.T) {
	cases := []struct {
		doc  Document
		want string
	}{
		// printf '\0\0\0\0\0\0\0\2abc' | sha256sum
		{Document{ID: "ignored", Title: "ab", Text: "c"}, "290a3daa9b49526a2ed7352cd7f5e69c551a01e15de61fc04c43f780d7172b71"},
		{Document{Title: "ab", Text: "c"}, "290a3daa9b49526a2ed7352cd7f5e69c551a01e15de61fc04c43f780d7172b71"},
		// printf '\0\0\0\0\0\0\0\0' | sha256sum
		{Document{ID: "empty"}, "af5570f5a1810b7af78caf4bc70a660f0df51e42baf91d4de5b2328de0e83dfc"},
	}
	for _, c := range cases {
		if got := c.doc.ContentHash(); got != c.want {
			t.Errorf("%+v: %s, want %s", c.doc, got, c.want)
		}
	}
	if (Document{Title: "a", Text: "bc"}).ContentHash() == cases[0].want {
		t.Errorf("(a, bc) and (ab, c) hash the same")
	}
	if (Document{Text: "x"}).ContentHash() == (Document{Title: "x"}).ContentHash() {
		t.Errorf("a title and a text hash the same")
	}
}

// TestOpenErrors checks failures that are not about the content: a
// missing file, a directory, a cancelled context.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := load(t, filepath.Join(dir, "nope.jsonl"), Options{}, "a")
	if !errors.Is(err, os.ErrNotExist) || schema.IsInvalidInput(err) {
		t.Errorf("missing file: %v; want a not-exist error, not an input error", err)
	}
	path := writeFile(t, dir, "c.tsv", []byte(strings.Repeat("1\tone\n", 100000)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Load(ctx, path, []string{"1"}, Options{BlockSize: 64}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v; want context.Canceled", err)
	}
}

// TestDetectFormat checks detection by content, inside gzip, and by
// extension, and the names ParseFormat takes.
func TestDetectFormat(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name    string
		content []byte
		want    Format
	}{
		{"corpus.txt", sampleJSONL(), FormatJSONL},                         // content wins
		{"corpus.tsv", []byte("\xef\xbb\xbf\n  {\"id\": 1}"), FormatJSONL}, // after a BOM and blank space
		{"corpus.dat", sampleTSV(false, false), FormatTSV},                 // the default
		{"corpus.jsonl", []byte(""), FormatJSONL},                          // empty: the extension
		{"corpus.parquet.gz", []byte("1\tx\n"), FormatParquet},             // text is not conclusive: the extension
		{"corpus.bin", sampleParquet(t), FormatParquet},
		{"corpus.bin.gz", gzipBytes(t, sampleParquet(t)), FormatParquet},
		{"c.gz", gzipBytes(t, sampleJSONL()), FormatJSONL},
		{"c.ndjson.gz", gzipBytes(t, []byte("\n")), FormatJSONL},
		{"c.pq", nil, FormatParquet},
	}
	for _, c := range cases {
		got, err := DetectFormat(writeFile(t, dir, c.name, c.content))
		if err != nil || got != c.want {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	for s, want := range map[string]Format{"": FormatAuto, "Auto": FormatAuto, "jsonl": FormatJSONL, "ndjson": FormatJSONL, "tsv": FormatTSV, "collection": FormatTSV, "PARQUET": FormatParquet} {
		if got, err := ParseFormat(s); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	if _, err := ParseFormat("csv"); err == nil {
		t.Error("ParseFormat(csv): no error")
	}
	// An empty corpus has nothing: every wanted id is missing.
	res, err := load(t, writeFile(t, dir, "empty.tsv", nil), Options{}, "b", "a")
	if err != nil || res.Read != 0 || !reflect.DeepEqual(res.Missing, []string{"a", "b"}) {
		t.Errorf("empty corpus: %+v, %v", res, err)
	}
}
