package schema

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v16/arrow/array"
)

// readText reads content as a file named name with every textOptions,
// plain and gzipped, checks that all reads agree, and returns the first.
func readText(t *testing.T, name, content string, role Role) *contents {
	t.Helper()
	dir := t.TempDir()
	plain := writeFile(t, dir, name, content)
	gz := writeFile(t, dir, name+".gz", string(gzipBytes(t, []byte(content))))
	var first *contents
	for _, path := range []string{plain, gz} {
		for _, opts := range textOptions {
			c := mustRead(t, path, role, opts)
			c.Batches = 0
			if first == nil {
				first = c
				continue
			}
			equal(t, path+" with "+formatOptions(opts), c, first)
		}
	}
	return first
}

func formatOptions(o Options) string {
	return fmt.Sprintf("block size %d, parallelism %d", o.BlockSize, o.Parallelism)
}

func TestQrelsSuccess(t *testing.T) {
	in := "# TREC qrels\n" +
		"301 0 FR940202-2-00150 1\n" +
		"301\t0\tFR940202-2-00151\t0\r\n" +
		"\n" +
		"302 0 msmarco_v2.1_doc_50_2286987788#13_3087841662 2\n" +
		"#302 0 commented 1\n" +
		"   303   Q0   dé\t\t+3  \n" +
		"304 iter d#1 -1\r\n" +
		"305 0 d5 2147483647\n" +
		"305 0 d6 -2147483648" // no final newline
	c := readText(t, "gold.qrels", in, RoleGold)
	if c.Form != FormGoldLong {
		t.Errorf("form %v", c.Form)
	}
	equal(t, "rows", c.GoldLong, []goldLongRow{
		{"301", "FR940202-2-00150", 1, 2},
		{"301", "FR940202-2-00151", 0, 3},
		{"302", "msmarco_v2.1_doc_50_2286987788#13_3087841662", 2, 5},
		{"303", "dé", 3, 7},
		{"304", "d#1", -1, 8},
		{"305", "d5", 2147483647, 9},
		{"305", "d6", -2147483648, 10},
	})
}

func TestTRECRunSuccess(t *testing.T) {
	in := "301 Q0 FR940202-2-00150 1 2.129133 STANDARD\n" +
		"301 Q0 d2 2 -0.5 STANDARD extra fields ignored\n" +
		"301\tQ0\td3\tx\t1e-3\ttag\r\n" +
		"# comment\n" +
		"302 Q0 msmarco_v2.1_doc_50_2286987788#13_3087841662 1 12 t\n" +
		"302 Q0 d5 2147483647 1e-400 t\n" +
		"302 Q0 d6 -3 +7.25 t\n" +
		"303 Q0 d7 3.0 0.1234567890123456789 t\n" +
		"303 Q0 d8 9999999999 -0 t"
	c := readText(t, "x.run", in, RoleRun)
	if c.Form != FormRunLong {
		t.Errorf("form %v", c.Form)
	}
	equal(t, "rows", c.RunLong, []runLongRow{
		{"301", "FR940202-2-00150", 2.129133, 1, true, 1},
		{"301", "d2", -0.5, 2, true, 2},
		{"301", "d3", 0.001, 0, false, 3},
		{"302", "msmarco_v2.1_doc_50_2286987788#13_3087841662", 12, 1, true, 5},
		{"302", "d5", 0, 2147483647, true, 6},
		{"302", "d6", 7.25, -3, true, 7},
		{"303", "d7", 0.1234567890123456789, 0, false, 8},
		{"303", "d8", 0, 0, false, 9},
	})
	// A bad rank on the first line of a block: the validity mask starts
	// there.
	c = readText(t, "y.run", "q Q0 a - 1 t\nq Q0 b 2 1 t\n", RoleRun)
	equal(t, "rows", c.RunLong, []runLongRow{{"q", "a", 1, 0, false, 1}, {"q", "b", 1, 2, true, 2}})

	// With SkipRanks every rank is null and the rest is the same, with
	// and without reused memory; a line without its six fields is still
	// refused.
	path := writeFile(t, t.TempDir(), "x.run", in)
	for _, reuse := range []bool{false, true} {
		got := mustRead(t, path, RoleRun, Options{SkipRanks: true, ReuseMemory: reuse, BlockSize: 64})
		want := slices.Clone(c.RunLong[:0])
		for _, r := range mustRead(t, path, RoleRun, Options{}).RunLong {
			r.Rank, r.RankValid = 0, false
			want = append(want, r)
		}
		equal(t, fmt.Sprintf("rows without ranks (reuse %v)", reuse), got.RunLong, want)
	}
	short := writeFile(t, t.TempDir(), "short.run", "q Q0 a 1 2.5 t\nq Q0 b 2 1\n")
	if _, err := readFile(t, short, RoleRun, Options{SkipRanks: true}); !errors.Is(err, ErrFieldCount) {
		t.Errorf("a five-field line with SkipRanks: %v, want %v", err, ErrFieldCount)
	}
}

func TestJSONLGoldSuccess(t *testing.T) {
	in := `{"query_id": "q1", "query": "what is x\u00e9", "relevant_ids": ["d1", "d2"], "tags": {"lang": ["en", "de"], "category": "policy"}}` + "\n" +
		`{"qid": 7, "relevance_map": {"d9": 2, "d3": 0, "d5": 1.0}, "difficulty": "hard"}` + "\r\n" +
		"\n# a comment\n" +
		`{"id": "q3", "question": "why", "relevantDocIds": [12, "d-1"], "tier": 1, "category": "faq"}` + "\n" +
		`{"query_id": "q4", "relevantDocs": [{"id": "a", "grade": 3}, {"doc_id": "b", "relevance": true}, {"_id": "c"}, {"docid": 5, "label": 0}, {"id": "e", "rel": false}]}` + "\n" +
		`{"query_id": "q5", "relevant_doc_ids": [], "tags": {"n": 1.5, "b": true, "none": null}}` + "\n" +
		`  {"query_id": null, "qid": "q6", "relevanceScores": {"x#1": -1}, "tags": null, "category": null}  ` + "\n" +
		`{"query_id": -12, "qrels": {"d": 4}, "category": ["a", "b"]}`
	c := readText(t, "gold.jsonl", in, RoleGold)
	if c.Form != FormGoldList {
		t.Errorf("form %v", c.Form)
	}
	equal(t, "rows", c.GoldList, []goldListRow{
		{QID: "q1", Query: "what is xé", HasText: true, Docs: []string{"d1", "d2"}, Grades: []int32{1, 1},
			Tags: []string{"category=policy", "lang=en", "lang=de"}, Pos: 1},
		{QID: "7", Docs: []string{"d3", "d5", "d9"}, Grades: []int32{0, 1, 2}, Tags: []string{"difficulty=hard"}, Pos: 2},
		{QID: "q3", Query: "why", HasText: true, Docs: []string{"12", "d-1"}, Grades: []int32{1, 1},
			Tags: []string{"category=faq", "tier=1"}, Pos: 5},
		{QID: "q4", Docs: []string{"a", "b", "c", "5", "e"}, Grades: []int32{3, 1, 1, 0, 0}, Tags: []string{}, Pos: 6},
		{QID: "q5", Docs: []string{}, Grades: []int32{}, Tags: []string{"b=true", "n=1.5"}, Pos: 7},
		{QID: "q6", Docs: []string{"x#1"}, Grades: []int32{-1}, Tags: []string{}, Pos: 8},
		{QID: "-12", Docs: []string{"d"}, Grades: []int32{4}, Tags: []string{"category=a", "category=b"}, Pos: 9},
	})
}

func TestJSONLRunSuccess(t *testing.T) {
	in := `{"query_id": "q1", "retrieved_ids": ["d3", "d1"]}` + "\n" +
		`{"qid": "q2", "retrievedDocs": [{"id": "d3", "score": 12.5}, {"id": "d9", "score": -1e-3}]}` + "\n" +
		`{"id": 3, "retrievedDocIds": ["a", 5], "scores": [0.5, 25]}` + "\n" +
		`{"query_id": "q4", "retrieved": []}` + "\n" +
		"# comment\r\n" +
		`{"query_id": "q5", "retrieved_doc_ids": [{"doc_id": "x"}, {"_id": "y", "score": null}]}` + "\n" +
		`{"query_id": "q6", "retrieved_ids": ["z"], "scores": null}` + "\n" +
		`{"query_id": "q7", "retrieved_ids": [{"id": "msmarco_v2.1_doc_50_2286987788#13_3087841662", "score": 1e300}]}`
	c := readText(t, "run.jsonl", in, RoleRun)
	if c.Form != FormRunList {
		t.Errorf("form %v", c.Form)
	}
	equal(t, "rows", c.RunList, []runListRow{
		{QID: "q1", Docs: []string{"d3", "d1"}, ScoresNull: true, Pos: 1},
		{QID: "q2", Docs: []string{"d3", "d9"}, Scores: []float64{12.5, -0.001}, Pos: 2},
		{QID: "3", Docs: []string{"a", "5"}, Scores: []float64{0.5, 25}, Pos: 3},
		{QID: "q4", Docs: []string{}, Scores: []float64{}, Pos: 4},
		{QID: "q5", Docs: []string{"x", "y"}, ScoresNull: true, Pos: 6},
		{QID: "q6", Docs: []string{"z"}, ScoresNull: true, Pos: 7},
		{QID: "q7", Docs: []string{"msmarco_v2.1_doc_50_2286987788#13_3087841662"}, Scores: []float64{1e300}, Pos: 8},
	})

	// The raw layout: list offsets, and score lists of rows without scores
	// are empty and null.
	p := writeFile(t, t.TempDir(), "run.jsonl", in)
	r, err := Open(context.Background(), p, RoleRun, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b, err := r.Next(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	docs := b.Record.Column(1).(*array.List)
	scores := b.Record.Column(2).(*array.List)
	equal(t, "doc offsets", docs.Offsets(), []int32{0, 2, 4, 6, 6, 8, 9, 10})
	equal(t, "score offsets", scores.Offsets(), []int32{0, 0, 2, 4, 4, 4, 4, 5})
	var valid []bool
	for i := 0; i < scores.Len(); i++ {
		valid = append(valid, scores.IsValid(i))
	}
	equal(t, "score validity", valid, []bool{false, true, true, true, false, false, true})
	equal(t, "lines", b.Lines, []int64{1, 2, 3, 4, 6, 7, 8})
	if _, err := r.Next(context.Background()); err != io.EOF {
		t.Errorf("Next at the end: %v", err)
	}
}

// TestJSONLAliasesAgree checks that aliases of one field (and a folded
// tag given at the top level and in tags) may be given together when they
// agree: same value, up to white space, or null; the value counts once.
func TestJSONLAliasesAgree(t *testing.T) {
	gold := `{"query_id": "q1", "qid": "q1", "id": "q1", "query": "x", "question": "x", "relevant_ids": ["d1","d2"], "relevantDocs": [ "d1", "d2" ], "category": "policy", "tags": {"category": "policy", "lang": "en"}}` + "\n" +
		`{"query_id": "q2", "id": null, "relevance_map": {"d1": 2}, "qrels": {"d1": 2}, "difficulty": ["hard", "easy"], "tags": {"difficulty": ["easy", "hard"]}, "tier": null}` + "\n" +
		`{"query_id": "q3", "relevantDocs": [{"id": "d1", "doc_id": "d1", "grade": 2, "relevance": 2}], "tier": 1, "tags": {"tier": "1", "category": null}, "category": "faq"}` + "\n"
	c := readText(t, "gold.jsonl", gold, RoleGold)
	equal(t, "gold rows", c.GoldList, []goldListRow{
		{QID: "q1", Query: "x", HasText: true, Docs: []string{"d1", "d2"}, Grades: []int32{1, 1}, Tags: []string{"category=policy", "lang=en"}, Pos: 1},
		{QID: "q2", Docs: []string{"d1"}, Grades: []int32{2}, Tags: []string{"difficulty=easy", "difficulty=hard"}, Pos: 2},
		{QID: "q3", Docs: []string{"d1"}, Grades: []int32{2}, Tags: []string{"tier=1", "category=faq"}, Pos: 3},
	})
	run := `{"query_id": "q1", "qid": "q1", "retrieved_ids": ["d1"], "retrieved": ["d1"]}` + "\n" +
		`{"qid": "q2", "retrievedDocs": [{"id": "d3", "_id": "d3", "score": 1}], "retrieved_ids": null}` + "\n"
	r := readText(t, "run.jsonl", run, RoleRun)
	equal(t, "run rows", r.RunList, []runListRow{
		{QID: "q1", Docs: []string{"d1"}, ScoresNull: true, Pos: 1},
		{QID: "q2", Docs: []string{"d3"}, Scores: []float64{1}, Pos: 2},
	})
}

// TestTextNoData checks files without data lines: they read as no batches
// and no error.
func TestTextNoData(t *testing.T) {
	for _, tc := range []struct {
		name string
		role Role
		form Form
	}{
		{"a.qrels", RoleGold, FormGoldLong},
		{"a.run", RoleRun, FormRunLong},
		{"a.jsonl", RoleGold, FormGoldList},
		{"b.jsonl", RoleRun, FormRunList},
	} {
		for _, in := range []string{"", "\n", "# only a comment\n\r\n  \t\n#x"} {
			for _, opts := range textOptions {
				p := writeFile(t, t.TempDir(), tc.name, in)
				r, err := Open(context.Background(), p, tc.role, opts)
				if err != nil {
					t.Fatalf("%s %q: %v", tc.name, in, err)
				}
				if r.Form() != tc.form {
					t.Errorf("%s: form %v before reading, want %v", tc.name, r.Form(), tc.form)
				}
				c, err := drain(t, r)
				if err != nil || c.rows() != 0 {
					t.Errorf("%s %q: %d rows, %v", tc.name, in, c.rows(), err)
				}
			}
		}
	}
}

// TestTextFormatOverride reads files whose extension says nothing (or
// the wrong thing) with an explicit format.
func TestTextFormatOverride(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "gold.data", "q1 0 d1 1\n")
	c := mustRead(t, p, RoleGold, Options{Format: FormatTREC})
	equal(t, "rows", c.GoldLong, []goldLongRow{{"q1", "d1", 1, 1}})
	p = writeFile(t, dir, "gold.txt", `{"qid": "q1", "relevant_ids": ["d1"]}`+"\n")
	c = mustRead(t, p, RoleGold, Options{}) // detected by content
	if len(c.GoldList) != 1 {
		t.Errorf("rows %+v", c)
	}
	c = mustRead(t, p, RoleGold, Options{Format: FormatJSONL})
	if len(c.GoldList) != 1 {
		t.Errorf("rows %+v", c)
	}
}

// TestTextCloseEarly closes readers before, during and after reading: no
// goroutine may block, and Close may be called twice.
func TestTextCloseEarly(t *testing.T) {
	var b []byte
	for i := 0; i < 5000; i++ {
		b = append(b, "q1 Q0 doc 1 2.5 tag\n"...)
	}
	p := writeFile(t, t.TempDir(), "x.run", string(b))
	for batches := 0; batches < 4; batches++ {
		r, err := Open(context.Background(), p, RoleRun, Options{BlockSize: 256, Parallelism: 3})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < batches; i++ {
			bt, err := r.Next(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			bt.Release()
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A cancelled context stops Next.
	ctx, cancel := context.WithCancel(context.Background())
	r, err := Open(ctx, p, RoleRun, Options{BlockSize: 256, Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	for i := 0; i < 1000; i++ {
		bt, err := r.Next(ctx)
		if err != nil {
			break
		}
		bt.Release()
	}
	r.Close()
}
