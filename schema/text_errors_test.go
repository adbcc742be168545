package schema

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// errCase is one malformed input and the errors it must give, in order.
type errCase struct {
	name string
	in   string
	want []wantErr
}

// textOptions are the reader options every text case is run with: one big
// block, and tiny blocks parsed in parallel so that nearly every line falls
// on a block boundary.
var textOptions = []Options{
	{},
	{BlockSize: 7, Parallelism: 3},
	{BlockSize: 1, Parallelism: 2},
}

// runErrCases checks each case as a plain file (format detected from ext
// and content) and gzipped, with every textOptions.
func runErrCases(t *testing.T, ext string, role Role, cases []errCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			plain := writeFile(t, dir, "in"+ext, tc.in)
			gz := writeFile(t, dir, "in"+ext+".gz", string(gzipBytes(t, []byte(tc.in))))
			for _, path := range []string{plain, gz} {
				for i, opts := range textOptions {
					c, err := readFile(t, path, role, opts)
					checkErrors(t, err, path, tc.want)
					if i == 0 && c != nil && c.rows() != 0 {
						t.Errorf("%s: %d rows returned before the error", path, c.rows())
					}
				}
			}
		})
	}
}

func TestQrelsErrors(t *testing.T) {
	runErrCases(t, ".qrels", RoleGold, []errCase{
		{"three fields", "q1 0 d1\n", []wantErr{{Line: 1, Is: ErrFieldCount, Has: "want 4 (query_id iteration doc_id grade), got 3"}}},
		{"five fields no hint", "q1 0 d1 1 x\n", []wantErr{{Line: 1, Is: ErrFieldCount, Has: "got 5"}}},
		{"one field", "q1\n", []wantErr{{Line: 1, Is: ErrFieldCount, Has: "got 1"}}},
		{"run passed as qrels", "301 Q0 FR940202-2-00150 1 2.129133 STANDARD\n", []wantErr{
			{Line: 1, Is: ErrFieldCount, Has: "got 6; this looks like a TREC run line: pass the file as the run"}}},
		{"run with extra fields as qrels", "301 Q0 d 1 2.1 tag extra\n", []wantErr{
			{Line: 1, Is: ErrFieldCount, Has: "got 7; this looks like a TREC run line"}}},
		{"grade word", "q1 0 d1 high\n", []wantErr{{Line: 1, Col: 9, Field: FieldGrade, Is: ErrNumber, Has: `want an integer, got "high"`}}},
		{"grade float", "q1 0 d1 1.5\n", []wantErr{{Line: 1, Col: 9, Field: FieldGrade, Is: ErrNumber}}},
		{"grade trec_eval reads otherwise", "q1 0 d1 10e-1\n", []wantErr{{Line: 1, Col: 9, Field: FieldGrade, Is: ErrNumber,
			Has: `want an integer, got "10e-1" (its value is 1, but trec_eval reads it as 10)`}}},
		{"grade hex", "q1 0 d1 0x1\n", []wantErr{{Line: 1, Col: 9, Field: FieldGrade, Is: ErrNumber}}},
		{"grade exponent", "q1 0 d1 1e2\n", []wantErr{{Line: 1, Col: 9, Field: FieldGrade, Is: ErrNumber}}},
		{"grade digit separator", "q1 0 d1 1_0\n", []wantErr{{Line: 1, Col: 9, Field: FieldGrade, Is: ErrNumber}}},
		{"grade overflow", "q1 0 d1 2147483648\n", []wantErr{{Line: 1, Col: 9, Field: FieldGrade, Is: ErrNumber}}},
		{"grade sign only", "q1 0 d1 -\n", []wantErr{{Line: 1, Col: 9, Field: FieldGrade, Is: ErrNumber}}},
		{"grade long garbage", "q1 0 d1 12345678901x\n", []wantErr{{Line: 1, Col: 9, Field: FieldGrade, Is: ErrNumber}}},
		{"invalid utf8 in doc id", "q1 0 d\xff1 1\n", []wantErr{{Line: 1, Col: 7, Is: ErrInvalidUTF8}}},
		{"invalid utf8 second line", "q1 0 d1 1\nq1 0 d2 \xc3\x28\n", []wantErr{{Line: 2, Col: 9, Is: ErrInvalidUTF8}}},
		{"truncated utf8 at line end", "q1 0 d1 1\xe2\x82\n", []wantErr{{Line: 1, Col: 10, Is: ErrInvalidUTF8}}},
		{"comments and blanks count as lines", "# header\n\n   \nq1 0 d1 1\n\t\nq1 0 d2 x\n", []wantErr{
			{Line: 6, Col: 9, Field: FieldGrade, Is: ErrNumber}}},
		{"crlf", "q1 0 d1 1\r\nq1 0 d2 x\r\n", []wantErr{{Line: 2, Col: 9, Field: FieldGrade, Is: ErrNumber, Has: `got "x"`}}},
		{"crlf blank lines", "\r\n\r\nq1 0 d2 x\r\n", []wantErr{{Line: 3, Col: 9, Field: FieldGrade, Is: ErrNumber}}},
		{"cr inside line is data", "q1 0 d1\r1\n", []wantErr{{Line: 1, Is: ErrFieldCount, Has: "got 3"}}},
		{"tabs", "q1\t0\td1\tx\n", []wantErr{{Line: 1, Col: 9, Field: FieldGrade, Is: ErrNumber}}},
		{"mixed runs of tabs and spaces", " \tq1 \t 0\t\td1   yes \n", []wantErr{{Line: 1, Col: 16, Field: FieldGrade, Is: ErrNumber, Has: `"yes"`}}},
		{"hash inside a line is data", "q1 0 doc#1\n", []wantErr{{Line: 1, Is: ErrFieldCount, Has: "got 3"}}},
		{"hash after a field is data", "q1 0 d1 1 # judged twice\n", []wantErr{{Line: 1, Is: ErrFieldCount, Has: "got 7"}}},
		{"indented hash is not a comment", "  # not a comment\n", []wantErr{{Line: 1, Col: 11, Field: FieldGrade, Is: ErrNumber, Has: `"comment"`}}},
		{"no final newline", "q1 0 d1 1\nq1 0 d2 bad", []wantErr{{Line: 2, Col: 9, Field: FieldGrade, Is: ErrNumber}}},
		{"several errors in order", "q1 0 d1 1\nq1 0 d2\nq1 0 d3 x\nq\xff 0 d4 1\nq1 0 d5 1 0.5 t\nq1 0 d6 3\n", []wantErr{
			{Line: 2, Is: ErrFieldCount},
			{Line: 3, Col: 9, Field: FieldGrade, Is: ErrNumber},
			{Line: 4, Col: 2, Is: ErrInvalidUTF8},
			{Line: 5, Is: ErrFieldCount, Has: "pass the file as the run"},
		}},
	})
}

func TestTRECRunErrors(t *testing.T) {
	runErrCases(t, ".run", RoleRun, []errCase{
		{"five fields", "q1 Q0 d1 1 2.5\n", []wantErr{{Line: 1, Is: ErrFieldCount, Has: "want 6 (query_id Q0 doc_id rank score run_tag), got 5"}}},
		{"qrels passed as run", "301 0 FR940202-2-00150 1\n", []wantErr{
			{Line: 1, Is: ErrFieldCount, Has: "got 4; this looks like a qrels line: pass the file as the gold set"}}},
		{"one field", "q1\n", []wantErr{{Line: 1, Is: ErrFieldCount, Has: "got 1"}}},
		{"score word", "q1 Q0 d1 1 high tag\n", []wantErr{{Line: 1, Col: 12, Field: FieldScore, Is: ErrNumber, Has: `"high"`}}},
		{"score with comma", "q1 Q0 d1 1 2,5 tag\n", []wantErr{{Line: 1, Col: 12, Field: FieldScore, Is: ErrNumber}}},
		{"score two dots", "q1 Q0 d1 1 2.5.1 tag\n", []wantErr{{Line: 1, Col: 12, Field: FieldScore, Is: ErrNumber}}},
		{"score digit separator", "q1 Q0 d1 1 1_0 tag\n", []wantErr{{Line: 1, Col: 12, Field: FieldScore, Is: ErrNumber, Has: "digit separators"}}},
		{"score separator in fraction", "q1 Q0 d1 1 0.1_5 tag\n", []wantErr{{Line: 1, Col: 12, Field: FieldScore, Is: ErrNumber}}},
		{"score NaN", "q1 Q0 d1 1 NaN tag\n", []wantErr{{Line: 1, Col: 12, Field: FieldScore, Is: ErrNotFinite}}},
		{"score nan lower", "q1 Q0 d1 1 nan tag\n", []wantErr{{Line: 1, Col: 12, Field: FieldScore, Is: ErrNotFinite}}},
		{"score inf", "q1 Q0 d1 1 inf tag\n", []wantErr{{Line: 1, Col: 12, Field: FieldScore, Is: ErrNotFinite}}},
		{"score -Infinity", "q1 Q0 d1 1 -Infinity tag\n", []wantErr{{Line: 1, Col: 12, Field: FieldScore, Is: ErrNotFinite}}},
		{"score out of range", "q1 Q0 d1 1 1e400 tag\n", []wantErr{{Line: 1, Col: 12, Field: FieldScore, Is: ErrNotFinite, Has: "out of the float64 range"}}},
		{"score negative out of range", "q1 Q0 d1 1 -2e308 tag\n", []wantErr{{Line: 1, Col: 12, Field: FieldScore, Is: ErrNotFinite}}},
		{"score long digits out of range", "q1 Q0 d1 1 " + strings.Repeat("9", 400) + " tag\n", []wantErr{{Line: 1, Col: 12, Field: FieldScore, Is: ErrNotFinite}}},
		{"invalid utf8 in tag", "q1 Q0 d1 1 2.5 t\x80g\n", []wantErr{{Line: 1, Col: 17, Is: ErrInvalidUTF8}}},
		{"invalid utf8 in query id", "\xffq Q0 d1 1 2.5 tag\n", []wantErr{{Line: 1, Col: 1, Is: ErrInvalidUTF8}}},
		{"crlf", "q1 Q0 d1 1 2.5 tag\r\nq1 Q0 d2 2 x tag\r\n", []wantErr{{Line: 2, Col: 12, Field: FieldScore, Is: ErrNumber}}},
		{"tabs", "q1\tQ0\td1\t1\tx\ttag\n", []wantErr{{Line: 1, Col: 12, Field: FieldScore, Is: ErrNumber}}},
		{"comment lines count", "#run\n#by me\nq1 Q0 d1 1 x t\n", []wantErr{{Line: 3, Col: 12, Field: FieldScore, Is: ErrNumber}}},
		{"hash in doc id is data", "q1 Q0 msmarco_v2.1_doc_50_2286987788#13_3087841662 1\n", []wantErr{
			{Line: 1, Is: ErrFieldCount, Has: "got 4"}}},
		{"several errors in order", "q1 Q0 d1 1 1 t\nq1 Q0 d2 2 NaN t\nq1 Q0 d3\nq1 Q0 d4 4 four t\nq1 0 d5 1\n", []wantErr{
			{Line: 2, Col: 12, Field: FieldScore, Is: ErrNotFinite},
			{Line: 3, Is: ErrFieldCount},
			{Line: 4, Col: 12, Field: FieldScore, Is: ErrNumber},
			{Line: 5, Is: ErrFieldCount, Has: "pass the file as the gold set"},
		}},
	})
}

func TestJSONLGoldErrors(t *testing.T) {
	runErrCases(t, ".jsonl", RoleGold, []errCase{
		{"truncated object", `{"query_id": "q1", ` + "\n", []wantErr{{Line: 1, Col: 19, Has: "invalid JSON"}}},
		{"bad token", `{"query_id": q1}` + "\n", []wantErr{{Line: 1, Col: 14, Has: "invalid JSON"}}},
		{"trailing garbage", `{"query_id": "q1", "relevant_ids": ["d1"]} x` + "\n", []wantErr{{Line: 1, Col: 44, Has: "invalid JSON"}}},
		{"array line", `["q1", "d1"]` + "\n", []wantErr{{Line: 1, Col: 1, Is: ErrTypeMismatch, Has: "want a JSON object"}}},
		{"null line", "null\n", []wantErr{{Line: 1, Col: 1, Is: ErrTypeMismatch}}},
		{"string line", `"q1"` + "\n", []wantErr{{Line: 1, Col: 1, Is: ErrTypeMismatch}}},
		{"missing query id", `{"relevant_ids": ["d1"]}` + "\n", []wantErr{{Line: 1, Is: ErrMissingField, Has: "query id"}}},
		{"null query id", `{"query_id": null, "relevant_ids": ["d1"]}` + "\n", []wantErr{{Line: 1, Is: ErrMissingField}}},
		{"empty query id", `{"query_id": "", "relevant_ids": ["d1"]}` + "\n", []wantErr{{Line: 1, Field: "query_id", Is: ErrEmptyID}}},
		{"bool query id", `{"qid": true, "relevant_ids": ["d1"]}` + "\n", []wantErr{{Line: 1, Field: "qid", Is: ErrTypeMismatch}}},
		{"object query id", `{"id": {"a": 1}, "relevant_ids": ["d1"]}` + "\n", []wantErr{{Line: 1, Field: "id", Is: ErrTypeMismatch}}},
		{"query not a string", `{"query_id": "q1", "query": 5, "relevant_ids": ["d1"]}` + "\n", []wantErr{{Line: 1, Field: "query", Is: ErrTypeMismatch}}},
		{"no relevant docs", `{"query_id": "q1", "query": "what"}` + "\n", []wantErr{{Line: 1, Is: ErrMissingField, Has: "want relevant documents"}}},
		{"run line as gold", `{"query_id": "q1", "retrieved_ids": ["d1"]}` + "\n", []wantErr{
			{Line: 1, Is: ErrMissingField, Has: "this looks like a run line (retrieved_ids): pass the file as the run"}}},
		{"scored run line as gold", `{"qid": "q1", "retrievedDocs": [{"id": "d1", "score": 1}]}` + "\n", []wantErr{
			{Line: 1, Is: ErrMissingField, Has: "this looks like a run line (retrievedDocs)"}}},
		{"binary and graded", `{"query_id": "q1", "relevant_ids": ["d1"], "relevance_map": {"d1": 1}}` + "\n", []wantErr{
			{Line: 1, Is: ErrDuplicate, Has: "both relevant_ids and relevance_map"}}},
		{"query_id and qid differ", `{"query_id": "q1", "qid": "q2", "relevant_ids": ["d1"]}` + "\n", []wantErr{
			{Line: 1, Is: ErrDuplicate, Has: "both query_id and qid, with different values: give one"}}},
		{"query_id and id differ", `{"id": 17, "query_id": "q1", "relevant_ids": ["d1"]}` + "\n", []wantErr{
			{Line: 1, Is: ErrDuplicate, Has: "both query_id and id"}}},
		{"qid and id differ", `{"qid": "1", "id": 1, "relevant_ids": ["d1"]}` + "\n", []wantErr{
			{Line: 1, Is: ErrDuplicate, Has: "both qid and id"}}},
		{"query and question differ", `{"query_id": "q1", "query": "a", "question": "b", "relevant_ids": ["d1"]}` + "\n", []wantErr{
			{Line: 1, Is: ErrDuplicate, Has: "both query and question"}}},
		{"two binary keys differ", `{"query_id": "q1", "relevant_ids": ["d1"], "relevantDocs": ["d2"]}` + "\n", []wantErr{
			{Line: 1, Is: ErrDuplicate, Has: "both relevant_ids and relevantDocs, with different values"}}},
		{"two graded keys differ", `{"query_id": "q1", "qrels": {"d1": 1}, "relevance_map": {"d1": 2}}` + "\n", []wantErr{
			{Line: 1, Is: ErrDuplicate, Has: "both relevance_map and qrels"}}},
		{"doc id aliases differ", `{"query_id": "q1", "relevant_ids": [{"id": "d1", "doc_id": "d2"}]}` + "\n", []wantErr{
			{Line: 1, Field: "relevant_ids", Is: ErrDuplicate, Has: "element 0: duplicate: both id and doc_id"}}},
		{"grade aliases differ", `{"query_id": "q1", "relevantDocs": [{"id": "d0"}, {"id": "d1", "grade": 2, "score": 0.87}]}` + "\n", []wantErr{
			{Line: 1, Field: "relevantDocs", Is: ErrDuplicate, Has: `element 1: doc "d1": duplicate: both grade and score`}}},
		{"category and tags.category differ", `{"query_id": "q1", "relevant_ids": ["d1"], "category": "policy", "tags": {"category": "legal"}}` + "\n", []wantErr{
			{Line: 1, Field: "tags", Is: ErrDuplicate, Has: `both category "policy" and tags.category "legal", with different values: give one`}}},
		{"difficulty list and tags.difficulty differ", `{"query_id": "q1", "relevant_ids": ["d1"], "difficulty": ["easy", "hard"], "tags": {"difficulty": "easy"}}` + "\n", []wantErr{
			{Line: 1, Field: "tags", Is: ErrDuplicate, Has: `both difficulty ["easy", "hard"] and tags.difficulty "easy"`}}},
		{"tier and tags.tier differ", `{"query_id": "q1", "relevant_ids": ["d1"], "tags": {"tier": 2}, "tier": 1}` + "\n", []wantErr{
			{Line: 1, Field: "tags", Is: ErrDuplicate, Has: `both tier "1" and tags.tier "2"`}}},
		{"relevant ids not a list", `{"query_id": "q1", "relevant_ids": "d1"}` + "\n", []wantErr{{Line: 1, Field: "relevant_ids", Is: ErrTypeMismatch}}},
		{"empty doc id", `{"query_id": "q1", "relevant_ids": ["d1", ""]}` + "\n", []wantErr{{Line: 1, Field: "relevant_ids", Is: ErrEmptyID, Has: "element 1"}}},
		{"empty doc id in object", `{"query_id": "q1", "relevantDocs": [{"id": ""}]}` + "\n", []wantErr{{Line: 1, Field: "relevantDocs", Is: ErrEmptyID}}},
		{"bool doc id", `{"query_id": "q1", "relevant_ids": [true]}` + "\n", []wantErr{{Line: 1, Field: "relevant_ids", Is: ErrTypeMismatch}}},
		{"null doc id", `{"query_id": "q1", "relevant_ids": ["d1", null]}` + "\n", []wantErr{{Line: 1, Field: "relevant_ids", Is: ErrTypeMismatch}}},
		{"doc object without id", `{"query_id": "q1", "relevant_ids": [{"grade": 2}]}` + "\n", []wantErr{{Line: 1, Field: "relevant_ids", Is: ErrMissingField, Has: "element 0"}}},
		{"fractional grade", `{"query_id": "q1", "relevant_ids": [{"id": "d1", "grade": 0.5}]}` + "\n", []wantErr{
			{Line: 1, Field: "relevant_ids", Is: ErrNumber, Has: `doc "d1": grade`}}},
		{"string grade", `{"query_id": "q1", "relevant_ids": [{"id": "d1", "relevance": "high"}]}` + "\n", []wantErr{
			{Line: 1, Field: "relevant_ids", Is: ErrNumber}}},
		{"grade out of int32", `{"query_id": "q1", "relevance_map": {"d1": 1e10}}` + "\n", []wantErr{{Line: 1, Field: "relevance_map", Is: ErrNumber}}},
		{"grade map word", `{"query_id": "q1", "relevance_map": {"d1": 2, "d2": "high"}}` + "\n", []wantErr{
			{Line: 1, Field: "relevance_map", Is: ErrNumber, Has: `doc "d2"`}}},
		{"grade map null", `{"query_id": "q1", "qrels": {"d1": null}}` + "\n", []wantErr{{Line: 1, Field: "qrels", Is: ErrNumber}}},
		{"grade map empty doc id", `{"query_id": "q1", "relevance_map": {"": 1}}` + "\n", []wantErr{{Line: 1, Field: "relevance_map", Is: ErrEmptyID}}},
		{"grade map not an object", `{"query_id": "q1", "relevanceScores": [1, 2]}` + "\n", []wantErr{{Line: 1, Field: "relevanceScores", Is: ErrTypeMismatch}}},
		{"invalid utf8", `{"query_id": "q` + "\xff" + `", "relevant_ids": ["d1"]}` + "\n", []wantErr{{Line: 1, Col: 16, Is: ErrInvalidUTF8}}},
		{"tags not an object", `{"query_id": "q1", "relevant_ids": ["d1"], "tags": ["a"]}` + "\n", []wantErr{{Line: 1, Field: "tags", Is: ErrTypeMismatch}}},
		{"tag value object", `{"query_id": "q1", "relevant_ids": ["d1"], "tags": {"a": {"b": 1}}}` + "\n", []wantErr{{Line: 1, Field: "tags", Is: ErrTypeMismatch}}},
		{"tag name with =", `{"query_id": "q1", "relevant_ids": ["d1"], "tags": {"a=b": "c"}}` + "\n", []wantErr{{Line: 1, Field: "tags", Has: "contain no '='"}}},
		{"empty tag name", `{"query_id": "q1", "relevant_ids": ["d1"], "tags": {"": "c"}}` + "\n", []wantErr{{Line: 1, Field: "tags", Has: "must be non-empty"}}},
		{"folded tag nested", `{"query_id": "q1", "relevant_ids": ["d1"], "category": [["x"]]}` + "\n", []wantErr{{Line: 1, Field: "tags", Is: ErrTypeMismatch, Has: `tag "category"`}}},
		{"errors after blank and comment lines", "\n# gold\n" + `{"query_id": "q1", "relevant_ids": ["d1"]}` + "\n\r\n" + `{"query_id": "q2"}` + "\r\n", []wantErr{
			{Line: 5, Is: ErrMissingField}}},
		{"several errors in order", `{"query_id": "q1", "relevant_ids": ["d1"]}` + "\n" +
			`{"query_id": "", "relevant_ids": ["d1"]}` + "\n" +
			`{` + "\n" +
			`{"query_id": "q3", "relevant_ids": ["d1"]}` + "\n" +
			`{"query_id": "q4", "relevance_map": {"d1": 0.5}}` + "\n", []wantErr{
			{Line: 2, Field: "query_id", Is: ErrEmptyID},
			{Line: 3, Col: 1, Has: "invalid JSON"},
			{Line: 5, Field: "relevance_map", Is: ErrNumber},
		}},
	})
}

func TestJSONLRunErrors(t *testing.T) {
	runErrCases(t, ".jsonl", RoleRun, []errCase{
		{"truncated object", `{"query_id": "q1", "retrieved_ids": ["d1"` + "\n", []wantErr{{Line: 1, Col: 41, Has: "invalid JSON"}}},
		{"NaN literal", `{"query_id": "q1", "retrieved_ids": [{"id": "d1", "score": NaN}]}` + "\n", []wantErr{{Line: 1, Col: 60, Has: "invalid JSON"}}},
		{"array line", `[1]` + "\n", []wantErr{{Line: 1, Col: 1, Is: ErrTypeMismatch}}},
		{"missing query id", `{"retrieved_ids": ["d1"]}` + "\n", []wantErr{{Line: 1, Is: ErrMissingField, Has: "query id"}}},
		{"empty query id", `{"qid": "", "retrieved_ids": ["d1"]}` + "\n", []wantErr{{Line: 1, Field: "qid", Is: ErrEmptyID}}},
		{"missing retrieved", `{"query_id": "q1"}` + "\n", []wantErr{{Line: 1, Is: ErrMissingField, Has: "want retrieved documents"}}},
		{"gold line as run", `{"query_id": "q1", "relevant_ids": ["d1"]}` + "\n", []wantErr{
			{Line: 1, Is: ErrMissingField, Has: "this looks like a gold line (relevant_ids): pass the file as the gold set"}}},
		{"graded gold line as run", `{"query_id": "q1", "relevance_map": {"d1": 2}}` + "\n", []wantErr{
			{Line: 1, Is: ErrMissingField, Has: "this looks like a gold line (relevance_map)"}}},
		{"retrieved not a list", `{"query_id": "q1", "retrieved": {"d1": 1}}` + "\n", []wantErr{{Line: 1, Field: "retrieved", Is: ErrTypeMismatch}}},
		{"retrieved aliases differ", `{"query_id": "q1", "retrieved_ids": ["d1", "d2"], "retrievedDocs": [{"id": "d2", "score": 1}]}` + "\n", []wantErr{
			{Line: 1, Is: ErrDuplicate, Has: "both retrieved_ids and retrievedDocs, with different values: give one"}}},
		{"query id aliases differ", `{"query_id": "q1", "qid": "q2", "retrieved_ids": ["d1"]}` + "\n", []wantErr{
			{Line: 1, Is: ErrDuplicate, Has: "both query_id and qid"}}},
		{"doc id aliases differ", `{"query_id": "q1", "retrievedDocs": [{"_id": "d1", "docid": "d9", "score": 1}]}` + "\n", []wantErr{
			{Line: 1, Field: "retrievedDocs", Is: ErrDuplicate, Has: "element 0: duplicate: both docid and _id"}}},
		{"empty doc id", `{"query_id": "q1", "retrieved_ids": ["d1", ""]}` + "\n", []wantErr{{Line: 1, Field: "retrieved_ids", Is: ErrEmptyID}}},
		{"empty doc id in object", `{"query_id": "q1", "retrievedDocs": [{"id": "", "score": 1}]}` + "\n", []wantErr{{Line: 1, Field: "retrievedDocs", Is: ErrEmptyID}}},
		{"doc object without id", `{"query_id": "q1", "retrievedDocs": [{"score": 1}]}` + "\n", []wantErr{{Line: 1, Field: "retrievedDocs", Is: ErrMissingField}}},
		{"some scores missing", `{"query_id": "q1", "retrievedDocs": [{"id": "d1", "score": 1}, {"id": "d2"}]}` + "\n", []wantErr{
			{Line: 1, Field: "retrievedDocs", Is: ErrMissingField, Has: "1 of 2 documents have a score"}}},
		{"score string", `{"query_id": "q1", "retrievedDocs": [{"id": "d1", "score": "high"}]}` + "\n", []wantErr{
			{Line: 1, Field: "retrievedDocs", Is: ErrNumber, Has: `doc "d1": score`}}},
		{"score NaN string", `{"query_id": "q1", "retrievedDocs": [{"id": "d1", "score": "NaN"}]}` + "\n", []wantErr{
			{Line: 1, Field: "retrievedDocs", Is: ErrNumber}}},
		{"score out of range", `{"query_id": "q1", "retrievedDocs": [{"id": "d1", "score": 1e400}]}` + "\n", []wantErr{
			{Line: 1, Field: "retrievedDocs", Is: ErrNotFinite, Has: "out of the float64 range"}}},
		{"score negative out of range", `{"query_id": "q1", "retrieved_ids": ["d1"], "scores": [-1e309]}` + "\n", []wantErr{
			{Line: 1, Field: "retrieved_ids", Is: ErrNotFinite}}},
		{"scores wrong length", `{"query_id": "q1", "retrieved_ids": ["d1", "d2"], "scores": [1]}` + "\n", []wantErr{
			{Line: 1, Field: "scores", Is: ErrTypeMismatch, Has: "want an array of 2 numbers"}}},
		{"scores not a list", `{"query_id": "q1", "retrieved_ids": ["d1"], "scores": 1}` + "\n", []wantErr{{Line: 1, Field: "scores", Is: ErrTypeMismatch}}},
		{"null in scores", `{"query_id": "q1", "retrieved_ids": ["d1", "d2"], "scores": [1, null]}` + "\n", []wantErr{
			{Line: 1, Field: "retrieved_ids", Is: ErrNumber, Has: `doc "d2"`}}},
		{"bool in scores", `{"query_id": "q1", "retrieved_ids": ["d1"], "scores": [true]}` + "\n", []wantErr{{Line: 1, Field: "retrieved_ids", Is: ErrNumber}}},
		{"invalid utf8", `{"query_id": "q1", "retrieved_ids": ["d` + "\xfe" + `"]}` + "\n", []wantErr{{Line: 1, Col: 40, Is: ErrInvalidUTF8}}},
		{"several errors in order", `{"query_id": "q1", "retrieved_ids": []}` + "\n" +
			`{"query_id": "q2", "retrieved_ids": [""]}` + "\n" +
			"# comment\n" +
			`{"query_id": "q3"}` + "\n" +
			`{"query_id": "q4", "retrieved_ids": ["d1"], "scores": ["x"]}` + "\n", []wantErr{
			{Line: 2, Field: "retrieved_ids", Is: ErrEmptyID},
			{Line: 4, Is: ErrMissingField},
			{Line: 5, Field: "retrieved_ids", Is: ErrNumber},
		}},
	})
}

// TestErrorMessages checks the rendering of errors: file:line:col, the
// field name and the cause.
func TestErrorMessages(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "x.qrels", "q1 0 d1 1\nq1 0 d2 high\n")
	_, err := readFile(t, p, RoleGold, Options{})
	want := p + `:2:9: field "grade": not a number: want an integer, got "high"`
	if err == nil || err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	p = writeFile(t, dir, "y.qrels", "q1 0 d1\n")
	_, err = readFile(t, p, RoleGold, Options{})
	if want := p + ":1: wrong number of fields: want 4 (query_id iteration doc_id grade), got 3"; err == nil || err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	e := &InputError{File: "g.arrow", Row: 7, Field: "doc_id", Err: ErrEmptyID}
	if got, want := e.Error(), `g.arrow: row 7: column "doc_id": empty id`; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
	e = &InputError{File: "g.arrow", Err: ErrCorrupt}
	if got, want := e.Error(), `g.arrow: corrupt or truncated file`; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
}

// TestManyErrors checks that a file with many errors reports the first
// ones in file order, counts the rest, and ends "(and N more errors)".
func TestManyErrors(t *testing.T) {
	var b strings.Builder
	const bad = 250 // more than maxBlockErrors, so blocks drop errors too
	var badLines []int64
	line := int64(0)
	for i := 0; i < 2*bad; i++ {
		line++
		if i%2 == 0 {
			fmt.Fprintf(&b, "q%d 0 d%d 1\n", i, i)
			continue
		}
		if i%7 == 0 {
			b.WriteString("# comment\n")
			line++
		}
		fmt.Fprintf(&b, "q%d 0 d%d x%d\n", i, i, i)
		badLines = append(badLines, line)
	}
	p := writeFile(t, t.TempDir(), "many.qrels", b.String())
	for _, opts := range []Options{
		{},
		{BlockSize: 100, Parallelism: 3},
		{BlockSize: 100, Parallelism: 3, MaxErrors: 3},
		{BlockSize: 4096, Parallelism: 1, MaxErrors: 100},
	} {
		t.Run(fmt.Sprintf("block%d_max%d", opts.BlockSize, opts.MaxErrors), func(t *testing.T) {
			_, err := readFile(t, p, RoleGold, opts)
			var l *ErrorList
			if !errors.As(err, &l) {
				t.Fatalf("error %v (%T), want *ErrorList", err, err)
			}
			limit := opts.MaxErrors
			if limit == 0 {
				limit = DefaultErrorLimit
			}
			if l.Len() != bad {
				t.Errorf("Len %d, want %d", l.Len(), bad)
			}
			// A block keeps at most maxBlockErrors in full, so a larger
			// limit may show fewer, but always the first ones.
			errs := l.Errors()
			if len(errs) > limit || len(errs) < min(limit, maxBlockErrors) {
				t.Fatalf("%d errors kept, want %d", len(errs), limit)
			}
			limit = len(errs)
			for i, e := range errs {
				checkInputError(t, e, wantErr{Line: badLines[i], Col: e.Column, Field: FieldGrade, Is: ErrNumber}, p)
			}
			msg := err.Error()
			if tail := fmt.Sprintf("\n(and %d more errors)", bad-limit); !strings.HasSuffix(msg, tail) {
				t.Errorf("message does not end %q:\n%s", tail, msg)
			}
			if n := strings.Count(msg, "\n"); n != limit {
				t.Errorf("message has %d lines, want %d", n+1, limit+1)
			}
			if !strings.HasPrefix(msg, fmt.Sprintf("%s:%d:", p, badLines[0])) {
				t.Errorf("message does not start with the first error:\n%s", msg)
			}
		})
	}
}

// TestErrorList checks the list on its own: ordering by file and position,
// the limit, Err with zero, one and many errors.
func TestErrorList(t *testing.T) {
	var l ErrorList
	if l.Err() != nil || l.Len() != 0 || l.Error() != "" {
		t.Fatalf("empty list: %v %d %q", l.Err(), l.Len(), l.Error())
	}
	l.Add(nil)
	if l.Len() != 0 {
		t.Fatalf("Add(nil) counted")
	}
	one := &InputError{File: "a", Line: 3, Err: ErrNumber}
	l.Add(one)
	if err := l.Err(); err != one {
		t.Fatalf("Err with one error = %v, want the error itself", err)
	}
	l.Add(fmt.Errorf("wrapped: %w", &InputError{File: "a", Line: 1, Err: ErrEmptyID}))
	l.Add(&InputError{File: "0", Row: 9, Err: ErrNull})
	l.Add(errors.New("no position"))
	got := l.Errors()
	if len(got) != 4 || got[0].File != "" || got[1].File != "0" || got[2].Line != 1 || got[3].Line != 3 {
		t.Fatalf("order: %v", l.Error())
	}
	if !errors.Is(l.Err(), ErrEmptyID) || !errors.Is(l.Err(), ErrNull) {
		t.Errorf("errors.Is through the list failed")
	}
	var m ErrorList
	m.Limit = 2
	for i := 20; i > 0; i-- {
		m.Add(&InputError{File: "f", Line: int64(i), Err: ErrNumber})
	}
	var o ErrorList
	o.Add(&InputError{File: "f", Line: 100, Err: ErrNumber})
	o.AddCount(5)
	m.Merge(&o)
	m.Merge(nil)
	if m.Len() != 26 {
		t.Errorf("Len %d, want 26", m.Len())
	}
	if es := m.Errors(); len(es) != 2 || es[0].Line != 1 || es[1].Line != 2 {
		t.Errorf("kept %v", m.Error())
	}
	if !strings.HasSuffix(m.Error(), "(and 24 more errors)") {
		t.Errorf("message %q", m.Error())
	}
	if IsInvalidInput(errors.New("x")) || !IsInvalidInput(&m) || !IsInvalidInput(fmt.Errorf("w: %w", one)) {
		t.Errorf("IsInvalidInput")
	}
}

// TestBlockBoundaries parses a long file with tiny blocks and several
// parsers, and checks that every row and every error keeps its line number
// far into the file, whatever the block size.
func TestBlockBoundaries(t *testing.T) {
	const n = 3000
	var good, bad strings.Builder
	var lines []int64
	var errLines []int64
	var errCols []int
	line := int64(0)
	for i := 0; i < n; i++ {
		// Vary line lengths and ends so that blocks cut lines everywhere.
		end := "\n"
		if i%3 == 0 {
			end = "\r\n"
		}
		if i%11 == 0 {
			good.WriteString("# comment " + strings.Repeat("#", i%17) + end)
			bad.WriteString("# comment " + strings.Repeat("#", i%17) + end)
			line++
		}
		if i%13 == 0 {
			good.WriteString(end)
			bad.WriteString("  \t" + end)
			line++
		}
		doc := fmt.Sprintf("msmarco_v2.1_doc_%d_%d#%d_%s", i%50, i*7919, i%20, strings.Repeat("x", i%37))
		l := fmt.Sprintf("q%d Q0 %s %d %d.%03d run%s", i/100, doc, i%100+1, n-i, i%1000, end)
		if i%5 == 0 {
			l = strings.ReplaceAll(l, " ", "\t")
		}
		good.WriteString(l)
		line++
		lines = append(lines, line)
		if i == 1234 || i == 2500 || i == 2999 {
			prefix := fmt.Sprintf("q%d Q0 %s %d ", i/100, doc, i%100+1)
			bad.WriteString(prefix + "NaN run" + end)
			errLines = append(errLines, line)
			errCols = append(errCols, len(prefix)+1)
		} else {
			bad.WriteString(l)
		}
	}
	dir := t.TempDir()
	gp := writeFile(t, dir, "good.run", good.String())
	bp := writeFile(t, dir, "bad.run", bad.String())
	ref := mustRead(t, gp, RoleRun, Options{Parallelism: 1})
	if ref.Batches != 1 || len(ref.RunLong) != n {
		t.Fatalf("reference: %d batches, %d rows", ref.Batches, len(ref.RunLong))
	}
	for i, r := range ref.RunLong {
		if r.Pos != lines[i] {
			t.Fatalf("row %d at line %d, want %d", i, r.Pos, lines[i])
		}
	}
	if got := ref.RunLong[1234].Doc; !strings.Contains(got, "#") {
		t.Fatalf("doc id %q lost its '#'", got)
	}
	for _, opts := range []Options{
		{BlockSize: 1, Parallelism: 3},
		{BlockSize: 37, Parallelism: 3},
		{BlockSize: 64, Parallelism: 3},
		{BlockSize: 1000, Parallelism: 2},
		{BlockSize: 4096, Parallelism: 3},
	} {
		c := mustRead(t, gp, RoleRun, opts)
		if c.Batches < 2 {
			t.Errorf("block size %d: %d batches", opts.BlockSize, c.Batches)
		}
		equal(t, fmt.Sprintf("rows with block size %d", opts.BlockSize), c.RunLong, ref.RunLong)

		_, err := readFile(t, bp, RoleRun, opts)
		want := make([]wantErr, len(errLines))
		for i, l := range errLines {
			want[i] = wantErr{Line: l, Col: errCols[i], Field: FieldScore, Is: ErrNotFinite}
		}
		checkErrors(t, err, bp, want)
	}
}

// TestLongLines checks lines much longer than the block size (the block
// grows to hold them).
func TestLongLines(t *testing.T) {
	long := strings.Repeat("d", 5000)
	in := "q1 0 " + long + " 1\n" + "q1 0 short 2\n" + "q2 0 " + long + "x 3"
	p := writeFile(t, t.TempDir(), "long.qrels", in)
	for _, opts := range []Options{{}, {BlockSize: 16, Parallelism: 3}, {BlockSize: 1, Parallelism: 1}} {
		c := mustRead(t, p, RoleGold, opts)
		equal(t, "rows", c.GoldLong, []goldLongRow{
			{"q1", long, 1, 1}, {"q1", "short", 2, 2}, {"q2", long + "x", 3, 3},
		})
	}
}

// TestGzipTruncated checks that a gzip stream cut anywhere is an error,
// never a silently shorter input.
func TestGzipTruncated(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&b, "q%d 0 doc-%d-%x %d\n", i%300, i, i*2654435761, i%4)
	}
	full := gzipBytes(t, []byte(b.String()))
	dir := t.TempDir()
	whole := writeFile(t, dir, "whole.qrels.gz", string(full))
	if c := mustRead(t, whole, RoleGold, Options{BlockSize: 4096}); len(c.GoldLong) != 20000 {
		t.Fatalf("%d rows", len(c.GoldLong))
	}
	for _, cut := range []int{len(full) / 2, len(full) - 100, len(full) - 8, len(full) - 4, len(full) - 1} {
		for _, opts := range []Options{{}, {BlockSize: 4096, Parallelism: 3}} {
			p := writeFile(t, dir, fmt.Sprintf("cut%d.qrels.gz", cut), string(full[:cut]))
			_, err := readFile(t, p, RoleGold, opts)
			if err == nil {
				t.Fatalf("cut at %d of %d: no error", cut, len(full))
			}
			es := inputErrors(t, err)
			if len(es) != 1 {
				t.Fatalf("cut at %d: %v", cut, err)
			}
			e := es[0]
			want := fmt.Sprintf("the gzip stream ends early, after %d bytes: the file is truncated", cut)
			if !errors.Is(e, ErrCorrupt) || e.File != p || !strings.Contains(e.Error(), want) {
				t.Errorf("cut at %d: error %q, want it to say %q", cut, e, want)
			}
		}
	}
	// Small file: every cut point.
	small := gzipBytes(t, []byte("q1 0 d1 1\nq1 0 d2 0\n"))
	for cut := 0; cut < len(small); cut++ {
		p := writeFile(t, dir, "small.qrels.gz", string(small[:cut]))
		for _, format := range []Format{FormatAuto, FormatTREC} {
			_, err := readFile(t, p, RoleGold, Options{Format: format})
			if cut >= 2 && err == nil {
				t.Fatalf("cut at %d of %d: no error", cut, len(small))
			}
			if cut >= 2 && (!IsInvalidInput(err) || !errors.Is(err, ErrCorrupt)) {
				t.Errorf("cut at %d: %v (%T)", cut, err, err)
			}
		}
	}
}

// TestGzipCorrupt checks a bad header, a corrupt deflate stream, a bad
// checksum and trailing garbage.
func TestGzipCorrupt(t *testing.T) {
	content := []byte(strings.Repeat("q1 0 doc 1\n", 100))
	good := gzipBytes(t, content)
	dir := t.TempDir()

	header := append([]byte{}, good...)
	header[2] = 7 // compression method other than deflate
	hp := writeFile(t, dir, "header.qrels.gz", string(header))
	for _, format := range []Format{FormatAuto, FormatTREC} {
		_, err := readFile(t, hp, RoleGold, Options{Format: format})
		var ie *InputError
		if !errors.As(err, &ie) || !errors.Is(err, ErrCorrupt) || ie.File != hp || !strings.Contains(err.Error(), "gzip header") {
			t.Errorf("format %v: bad header: %v", format, err)
		}
	}
	if _, err := DetectFormat(hp); !errors.Is(err, ErrCorrupt) {
		t.Errorf("DetectFormat bad header: %v", err)
	}
	if _, err := DetectRole(hp, FormatTREC); !errors.Is(err, ErrCorrupt) {
		t.Errorf("DetectRole bad header: %v", err)
	}

	onlyMagic := writeFile(t, dir, "magic.qrels.gz", "\x1f\x8b")
	if _, err := readFile(t, onlyMagic, RoleGold, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("magic only: %v", err)
	}

	checksum := append([]byte{}, good...)
	checksum[len(checksum)-8] ^= 0xff // CRC-32
	cp := writeFile(t, dir, "crc.qrels.gz", string(checksum))
	if _, err := readFile(t, cp, RoleGold, Options{}); !errors.Is(err, ErrCorrupt) || !IsInvalidInput(err) {
		t.Errorf("bad checksum: %v", err)
	}

	size := append([]byte{}, good...)
	size[len(size)-1] ^= 0xff // ISIZE
	sp := writeFile(t, dir, "size.qrels.gz", string(size))
	if _, err := readFile(t, sp, RoleGold, Options{}); !errors.Is(err, ErrCorrupt) || !IsInvalidInput(err) {
		t.Errorf("bad size: %v", err)
	}

	// Data after the stream is told apart from a stream that ends early,
	// with the offset where it starts; a second gzip member is data.
	garbage := append(append([]byte{}, good...), "trailing junk"...)
	gp := writeFile(t, dir, "garbage.qrels.gz", string(garbage))
	want := fmt.Sprintf("%s: corrupt or truncated file: trailing data after the gzip stream, at byte %d: something was appended", gp, len(good))
	if _, err := readFile(t, gp, RoleGold, Options{}); !errors.Is(err, ErrCorrupt) || !IsInvalidInput(err) || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("trailing garbage: %v\nwant %s", err, want)
	}
	two := writeFile(t, dir, "two.qrels.gz", string(good)+string(gzipBytes(t, []byte("q2 0 doc 1\n"))))
	if c := mustRead(t, two, RoleGold, Options{}); len(c.GoldLong) != 101 {
		t.Errorf("two gzip members: %d rows, want 101", len(c.GoldLong))
	}
	cutSecond := writeFile(t, dir, "cut-second.qrels.gz", string(good)+string(gzipBytes(t, []byte("q2 0 doc 1\n"))[:15]))
	if _, err := readFile(t, cutSecond, RoleGold, Options{}); err == nil || !strings.Contains(err.Error(), "the gzip stream ends early") {
		t.Errorf("second member cut: %v", err)
	}

	// Corrupt the deflate data itself: every variant must be an input
	// error marked corrupt, or (rarely) decode to lines that fail to
	// parse; never a panic or a success with other content.
	for i := 10; i < len(good)-8; i++ {
		bad := append([]byte{}, good...)
		bad[i] ^= 0x55
		p := writeFile(t, dir, "body.qrels.gz", string(bad))
		c, err := readFile(t, p, RoleGold, Options{})
		if err == nil {
			if len(c.GoldLong) != 100 {
				t.Fatalf("byte %d flipped: success with %d rows", i, len(c.GoldLong))
			}
			continue
		}
		if !IsInvalidInput(err) {
			t.Fatalf("byte %d flipped: %v (%T)", i, err, err)
		}
		if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrFieldCount) && !errors.Is(err, ErrInvalidUTF8) && !errors.Is(err, ErrNumber) {
			t.Errorf("byte %d flipped: %v is not marked corrupt", i, err)
		}
	}
}

// TestGzipMultiMember reads a file of concatenated gzip members (as
// written by cat a.gz b.gz).
func TestGzipMultiMember(t *testing.T) {
	a := gzipBytes(t, []byte("q1 0 d1 1\n"))
	b := gzipBytes(t, []byte("q2 0 d2 2\n"))
	p := writeFile(t, t.TempDir(), "cat.qrels.gz", string(a)+string(b))
	c := mustRead(t, p, RoleGold, Options{})
	equal(t, "rows", c.GoldLong, []goldLongRow{{"q1", "d1", 1, 1}, {"q2", "d2", 2, 2}})
}

func TestOpenMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.qrels")
	for _, format := range []Format{FormatAuto, FormatTREC, FormatJSONL, FormatArrow, FormatParquet} {
		_, err := Open(t.Context(), p, RoleGold, Options{Format: format})
		if !errors.Is(err, os.ErrNotExist) || IsInvalidInput(err) {
			t.Errorf("format %v: %v", format, err)
		}
	}
	if _, err := Open(t.Context(), p, RoleGold, Options{Format: Format(99)}); !errors.Is(err, ErrUnknownFormat) {
		t.Errorf("unknown format: %v", err)
	}
}

// Grades written as decimals whose value is an integer are read as that
// integer, the value trec_eval's atol gives them.
func TestQrelsDecimalGrades(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "g.qrels", "q1 0 d1 1.0\nq1 0 d2 1e0\nq1 0 d3 2.00\nq1 0 d4 -1.0\nq1 0 d5 +3\nq1 0 d6 0E5\n")
	c := mustRead(t, p, RoleGold, Options{})
	var got []int32
	for _, r := range c.GoldLong {
		got = append(got, r.Grade)
	}
	if fmt.Sprint(got) != "[1 1 2 -1 3 0]" {
		t.Fatalf("grades %v, want [1 1 2 -1 3 0]", got)
	}
}

// A file whose lines end in a lone CR (classic Mac OS) is one long line
// to a reader that splits on LF: it is refused and named as such, in every
// text format and role, gzipped or not, while CR LF ends are read.
func TestCROnlyLineEnds(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		text string
		role Role
	}{
		"qrels.trec":  {"q1 0 d1 1\rq1 0 d2 2\rq2 0 d3 1\r", RoleGold},
		"run.trec":    {"q1 Q0 d1 1 9 t\rq1 Q0 d2 2 8 t\r", RoleRun},
		"gold.jsonl":  {`{"query_id": "q1", "relevant_ids": ["d1"]}` + "\r" + `{"query_id": "q2", "relevant_ids": ["d2"]}` + "\r", RoleGold},
		"no-end.trec": {"q1 Q0 d1 1 9 t\rq1 Q0 d2 2 8 t", RoleRun},
	} {
		for _, gz := range []bool{false, true} {
			p := writeFile(t, dir, name, c.text)
			if gz {
				p = writeFile(t, dir, name+".gz", string(gzipBytes(t, []byte(c.text))))
			}
			_, err := readFile(t, p, c.role, Options{})
			want := p + ":1: unsupported line ends: line ends are CR only (classic Mac); convert to LF"
			if !errors.Is(err, ErrLineEnds) || !IsInvalidInput(err) || err.Error() != want {
				t.Errorf("%s: %v\nwant %s", p, err, want)
			}
		}
	}
	crlf := writeFile(t, dir, "crlf.qrels", "q1 0 d1 1\r\nq1 0 d2 2\r\n")
	if c := mustRead(t, crlf, RoleGold, Options{}); len(c.GoldLong) != 2 {
		t.Fatalf("CR LF: %d rows", len(c.GoldLong))
	}
}
