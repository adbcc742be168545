package schema

import (
	"testing"
)

const bom = "\xef\xbb\xbf"

// TestByteOrderMark checks that a UTF-8 byte-order mark at the start of a
// text file is not data: the file reads exactly as without it, rows and
// errors alike, at the same lines and columns, plain and gzipped, whatever
// the block size, with the format given by the extension or detected.
func TestByteOrderMark(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		role       Role
		in         string
	}{
		{"qrels", "g.qrels", RoleGold, "301 0 d1 1\n301 0 d2 0\n302 0 d3 2\n"},
		{"qrels crlf no final newline", "g.qrels", RoleGold, "301\t0\td1\t1\r\n302 0 d2 1"},
		{"qrels comment first", "g.qrels", RoleGold, "# judged by me\n301 0 d1 1\n"},
		{"qrels blank first", "g.qrels", RoleGold, "\n\n301 0 d1 1\n"},
		{"qrels detected", "g", RoleGold, "301 0 d1 1\n"},
		{"run", "r.run", RoleRun, "301 Q0 d1 1 2.5 tag\n301 Q0 d2 2 1.5 tag\n"},
		{"jsonl gold", "g.jsonl", RoleGold, `{"query_id": "q1", "relevant_ids": ["d1"], "category": "c"}` + "\n"},
		{"jsonl run", "r.jsonl", RoleRun, `{"query_id": "q1", "retrieved_ids": ["d1", "d2"]}` + "\n" + `{"qid": "q2", "retrieved": []}` + "\n"},
		{"jsonl detected by content", "r.txt", RoleRun, `{"query_id": "q1", "retrieved_ids": ["d1"]}` + "\n"},
		{"jsonl detected without extension", "g", RoleGold, `{"query_id": "q1", "relevance_map": {"d1": 2}}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := readText(t, tc.file, tc.in, tc.role)
			got := readText(t, tc.file, bom+tc.in, tc.role)
			equal(t, "rows with a byte-order mark", got, want)
		})
	}
}

// TestByteOrderMarkErrors checks that errors in a file that starts with a
// byte-order mark are reported at the lines and columns of the text after
// it, as if it were not there.
func TestByteOrderMarkErrors(t *testing.T) {
	for _, tc := range []struct {
		name, ext string
		role      Role
		in        string
		want      []wantErr
	}{
		{"qrels grade on line 1", ".qrels", RoleGold, "q1 0 d1 x\n", []wantErr{{Line: 1, Col: 9, Field: FieldGrade, Is: ErrNumber}}},
		{"qrels field count", ".qrels", RoleGold, "q1 0 d1\nq1 0 d2 1 2 t\n", []wantErr{
			{Line: 1, Is: ErrFieldCount}, {Line: 2, Is: ErrFieldCount, Has: "pass the file as the run"}}},
		{"run score on line 1", ".run", RoleRun, "q1 Q0 d1 1 NaN t\n", []wantErr{{Line: 1, Col: 12, Field: FieldScore, Is: ErrNotFinite}}},
		{"jsonl syntax on line 1", ".jsonl", RoleGold, `{"query_id": q1}` + "\n", []wantErr{{Line: 1, Col: 14, Has: "invalid JSON"}}},
		{"jsonl invalid utf8 on line 1", ".jsonl", RoleRun, `{"query_id": "q1", "retrieved_ids": ["d` + "\xfe" + `"]}` + "\n", []wantErr{{Line: 1, Col: 40, Is: ErrInvalidUTF8}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runErrCases(t, tc.ext, tc.role, []errCase{{"without", tc.in, tc.want}, {"with", bom + tc.in, tc.want}})
		})
	}
}

// TestByteOrderMarkElsewhere checks that a byte-order mark anywhere but at
// the very start of the file stays what it is: an ordinary character of an
// id in TREC, an error in JSON. Tiny blocks put it at the start of a block,
// which is not the start of the file.
func TestByteOrderMarkElsewhere(t *testing.T) {
	c := readText(t, "g.qrels", "301 0 d1 1\n"+bom+"302 0 d2 1\n", RoleGold)
	equal(t, "BOM on line 2", c.GoldLong, []goldLongRow{{"301", "d1", 1, 1}, {bom + "302", "d2", 1, 2}})

	c = readText(t, "g.qrels", bom+bom+"301 0 d1 1\n", RoleGold)
	equal(t, "two BOMs", c.GoldLong, []goldLongRow{{bom + "301", "d1", 1, 1}})

	c = readText(t, "g.qrels", "\n"+bom+"301 0 d1 1\n", RoleGold)
	equal(t, "BOM after a blank line", c.GoldLong, []goldLongRow{{bom + "301", "d1", 1, 2}})

	c = readText(t, "r.run", "301 Q0 d1 1 2 t\n301 Q0 "+bom+"d2 2 1 t\n", RoleRun)
	equal(t, "BOM inside a line", c.RunLong, []runLongRow{{"301", "d1", 2, 1, true, 1}, {"301", bom + "d2", 1, 2, true, 2}})

	runErrCases(t, ".jsonl", RoleGold, []errCase{
		{"BOM on line 2", `{"query_id": "q1", "relevant_ids": ["d1"]}` + "\n" + bom + `{"query_id": "q2", "relevant_ids": ["d1"]}` + "\n",
			[]wantErr{{Line: 2, Col: 1, Has: "invalid JSON"}}},
		{"two BOMs", bom + bom + `{"query_id": "q1", "relevant_ids": ["d1"]}` + "\n", []wantErr{{Line: 1, Col: 1, Has: "invalid JSON"}}},
	})
}

// TestDetectByteOrderMark checks format and role detection of text files
// that start with a byte-order mark, plain and gzipped.
func TestDetectByteOrderMark(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content string
		format        Format
		role          Role
	}{
		{"g.qrels", "301 0 d1 1\n", FormatTREC, RoleGold},
		{"noext", " 301 0 d1 1\n", FormatTREC, RoleGold},
		{"r.txt", "#run\n301 Q0 d1 1 2.5 t\n", FormatTREC, RoleRun},
		{"g.txt", `{"query_id": "q1", "relevant_ids": ["d1"]}` + "\n", FormatJSONL, RoleGold},
		{"r", `{"query_id": "q1", "retrieved_ids": ["d1"]}` + "\n", FormatJSONL, RoleRun},
	} {
		for _, gz := range []bool{false, true} {
			name, content := tc.name, bom+tc.content
			if gz {
				name, content = name+".gz", string(gzipBytes(t, []byte(content)))
			}
			p := writeFile(t, dir, name, content)
			if f, err := DetectFormat(p); err != nil || f != tc.format {
				t.Errorf("DetectFormat(%s) = %v, %v; want %v", name, f, err, tc.format)
			}
			if r, err := DetectRole(p, FormatAuto); err != nil || r != tc.role {
				t.Errorf("DetectRole(%s) = %v, %v; want %v", name, r, err, tc.role)
			}
		}
	}
}
