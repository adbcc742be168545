package schema

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/memory"
)

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]Format{
		"": FormatAuto, "auto": FormatAuto, " TREC ": FormatTREC, "qrels": FormatTREC, "run": FormatTREC,
		"trec-run": FormatTREC, "jsonl": FormatJSONL, "ndjson": FormatJSONL, "JSON": FormatJSONL,
		"arrow": FormatArrow, "feather": FormatArrow, "ipc": FormatArrow, "arrow-stream": FormatArrowStream,
		"arrows": FormatArrowStream, "parquet": FormatParquet, "pq": FormatParquet,
	} {
		got, err := ParseFormat(in)
		if err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := ParseFormat("csv"); err == nil || !strings.Contains(err.Error(), `"csv"`) {
		t.Errorf("ParseFormat(csv): %v", err)
	}
	for _, f := range []Format{FormatTREC, FormatJSONL, FormatArrow, FormatArrowStream, FormatParquet} {
		if got, err := ParseFormat(f.String()); err != nil || got != f {
			t.Errorf("ParseFormat(%v.String()) = %v, %v", f, got, err)
		}
	}
}

func TestFormatFromExtension(t *testing.T) {
	for in, want := range map[string]Format{
		"a.jsonl": FormatJSONL, "a.NDJSON": FormatJSONL, "a.json.gz": FormatJSONL, "dir.arrow/a.txt": FormatTREC,
		"a.arrow": FormatArrow, "a.feather": FormatArrow, "a.ipc": FormatArrow, "a.arrows": FormatArrowStream,
		"a.parquet": FormatParquet, "a.pq": FormatParquet, "qrels.test": FormatTREC, "a.qrels.gz": FormatTREC,
		"a.run": FormatTREC, "a.res": FormatTREC, "a.tsv": FormatTREC, "a": FormatAuto, "a.gz": FormatAuto,
		"a.csv": FormatAuto,
	} {
		if got := FormatFromExtension(in); got != want {
			t.Errorf("FormatFromExtension(%q) = %v, want %v", in, got, want)
		}
	}
}

// detectFiles writes one file of every format and role.
func detectFiles(t *testing.T) (dir string, files []detectFile) {
	t.Helper()
	dir = t.TempDir()
	add := func(name, content string, format Format, role Role) {
		files = append(files, detectFile{writeFile(t, dir, name, content), format, role})
		gz := string(gzipBytes(t, []byte(content)))
		if format == FormatTREC || format == FormatJSONL {
			files = append(files, detectFile{writeFile(t, dir, name+".gz", gz), format, role})
		}
	}
	add("g.qrels", "# qrels\n\n301 0 d1 1\n", FormatTREC, RoleGold)
	add("r.run", "301 Q0 d1 1 2.5 tag\n", FormatTREC, RoleRun)
	add("r7.txt", "301 Q0 d1 1 2.5 tag extra\n", FormatTREC, RoleRun)
	add("noext", "\r\n#c\n301\t0\td1\t1\r\n", FormatTREC, RoleGold)
	add("g.jsonl", `{"query_id": "q1", "relevant_ids": ["d1"]}`+"\n", FormatJSONL, RoleGold)
	add("g2.json", `{"qid": "q1", "relevance_map": {"d1": 2}}`+"\n", FormatJSONL, RoleGold)
	add("r.jsonl", `{"query_id": "q1", "retrieved_ids": ["d1"]}`+"\n", FormatJSONL, RoleRun)
	add("r.txt", "\n  "+`{"query_id": "q1", "retrievedDocs": [{"id": "d1", "score": 1}]}`+"\n", FormatJSONL, RoleRun)
	add("r.qrels", `{"query_id": "q1", "retrieved": []}`+"\n", FormatJSONL, RoleRun) // content beats extension

	mem := memory.NewGoAllocator()
	for _, tc := range []struct {
		s    *arrow.Schema
		rows string
		role Role
	}{
		{GoldLong(), `[{"query_id": "q", "doc_id": "d", "grade": 1}]`, RoleGold},
		{GoldList(), `[{"query_id": "q", "doc_ids": ["d"], "grades": [1]}]`, RoleGold},
		{RunLong(), `[{"query_id": "q", "doc_id": "d", "score": 1}]`, RoleRun},
		{RunList(), `[{"query_id": "q", "doc_ids": ["d"], "scores": [1]}]`, RoleRun},
		{arrow.NewSchema([]arrow.Field{fQueryID, fDocID, {Name: "relevance", Type: arrow.PrimitiveTypes.Int8}}, nil),
			`[{"query_id": "q", "doc_id": "d", "relevance": 1}]`, RoleGold},
		{arrow.NewSchema([]arrow.Field{fQueryID, fDocID, fRank}, nil), `[{"query_id": "q", "doc_id": "d", "rank": 1}]`, RoleRun},
	} {
		recs := recordsFromJSON(t, mem, tc.s, tc.rows)
		for _, cf := range columnarFormats {
			name := tc.role.String() + "-" + tc.s.Field(tc.s.NumFields()-1).Name
			// Extension, and a misleading one: content decides.
			p := writeColumnar(t, dir, name+cf.ext, cf.format, tc.s, recs)
			files = append(files, detectFile{p, cf.format, tc.role})
			p = writeColumnar(t, dir, name+"-"+cf.format.String()+".txt", cf.format, tc.s, recs)
			files = append(files, detectFile{p, cf.format, tc.role})
		}
		release(recs)
	}
	return dir, files
}

type detectFile struct {
	path   string
	format Format
	role   Role
}

func TestDetect(t *testing.T) {
	_, files := detectFiles(t)
	for _, f := range files {
		name := filepath.Base(f.path)
		got, err := DetectFormat(f.path)
		if err != nil || got != f.format {
			t.Errorf("DetectFormat(%s) = %v, %v; want %v", name, got, err, f.format)
			continue
		}
		for _, format := range []Format{FormatAuto, f.format} {
			role, err := DetectRole(f.path, format)
			if err != nil || role != f.role {
				t.Errorf("DetectRole(%s, %v) = %v, %v; want %v", name, format, role, err, f.role)
			}
		}
		// And the file reads in that role (a run needs scores).
		if !strings.HasPrefix(name, "run-rank") {
			mustRead(t, f.path, f.role, Options{})
		}
	}
}

func TestDetectRoleUndecided(t *testing.T) {
	dir := t.TempDir()
	mem := memory.NewGoAllocator()
	for _, tc := range []struct {
		name, content string
		is            error
		invalidInput  bool
	}{
		{"five.qrels", "q1 0 d1 1 x\n", ErrFieldCount, true},
		{"three.run", "q1 0 d1\n", ErrFieldCount, true},
		{"empty.qrels", "", ErrMissingField, true},
		{"comments.run", "# a\n\n#b\n", ErrMissingField, true},
		{"neither.jsonl", `{"query_id": "q1"}` + "\n", ErrMissingField, true},
		{"bad.jsonl", `{"query_id": ` + "\n", nil, true},
		{"both.jsonl", `{"query_id": "q1", "relevant_ids": ["a"], "retrieved_ids": ["a"]}` + "\n", nil, false},
		{"nulls.jsonl", `{"query_id": "q1", "relevant_ids": null, "retrieved_ids": ["a"]}` + "\n", nil, false},
	} {
		p := writeFile(t, dir, tc.name, tc.content)
		role, err := DetectRole(p, FormatAuto)
		if tc.name == "nulls.jsonl" {
			if err != nil || role != RoleRun {
				t.Errorf("%s: %v, %v", tc.name, role, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: role %v, want an error", tc.name, role)
			continue
		}
		if tc.is != nil && !errors.Is(err, tc.is) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.is)
		}
		if IsInvalidInput(err) != tc.invalidInput {
			t.Errorf("%s: IsInvalidInput(%v) = %v", tc.name, err, !tc.invalidInput)
		}
		if tc.name == "both.jsonl" && !strings.Contains(err.Error(), "--role") {
			t.Errorf("%s: %v does not suggest --role", tc.name, err)
		}
	}
	// Columns that name neither a grade nor a score.
	s := arrow.NewSchema([]arrow.Field{fQueryID, fDocIDs}, nil)
	recs := recordsFromJSON(t, mem, s, `[{"query_id": "q", "doc_ids": ["d"]}]`)
	defer release(recs)
	for _, cf := range columnarFormats {
		p := writeColumnar(t, dir, "ids"+cf.ext, cf.format, s, recs)
		if _, err := DetectRole(p, FormatAuto); err == nil || !strings.Contains(err.Error(), "[query_id doc_ids]") {
			t.Errorf("%v: %v", cf.format, err)
		}
	}
	// Not columnar at all.
	p := writeFile(t, dir, "text.arrow", "q1 0 d1 1\n")
	if _, err := DetectRole(p, FormatAuto); !errors.Is(err, ErrCorrupt) {
		t.Errorf("text.arrow: %v", err)
	}
	p = writeFile(t, dir, "text.parquet", "PAR1 not really")
	if _, err := DetectRole(p, FormatAuto); !errors.Is(err, ErrCorrupt) {
		t.Errorf("text.parquet: %v", err)
	}
	if _, err := DetectRole(filepath.Join(dir, "missing.qrels"), FormatAuto); err == nil || IsInvalidInput(err) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := DetectRole(filepath.Join(dir, "missing.qrels"), FormatTREC); err == nil || IsInvalidInput(err) {
		t.Errorf("missing file: %v", err)
	}
}

// TestDetectGzipHead checks that detection looks inside gzip and past
// leading comments, and that a gzipped file with a long first line is
// still detected.
func TestDetectGzipHead(t *testing.T) {
	dir := t.TempDir()
	long := `{"query_id": "q1", "relevant_ids": ["` + strings.Repeat("d", 2000) + `"]}` + "\n"
	p := writeFile(t, dir, "long.dat.gz", string(gzipBytes(t, []byte(long))))
	if f, err := DetectFormat(p); err != nil || f != FormatJSONL {
		t.Errorf("long gz: %v %v", f, err)
	}
	if r, err := DetectRole(p, FormatAuto); err != nil || r != RoleGold {
		t.Errorf("long gz role: %v %v", r, err)
	}
	p = writeFile(t, dir, "comments.dat", strings.Repeat("# comment line\n", 100)+`{"qid": "q"}`+"\n")
	if f, err := DetectFormat(p); err != nil || f != FormatTREC {
		// The head is 512 bytes: past them the extension (none) decides.
		t.Errorf("comments: %v %v", f, err)
	}
	p = writeFile(t, dir, "comments.jsonl", strings.Repeat("# comment line\n", 100)+`{"qid": "q", "relevant_ids": ["a"]}`+"\n")
	if r, err := DetectRole(p, FormatAuto); err != nil || r != RoleGold {
		t.Errorf("comments role: %v %v", r, err)
	}
}
