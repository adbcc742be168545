package corpus

import (
	"bytes"
	"fmt"

	"github.com/evalgate/evalgate/schema"
)

// tsvParser parses collection.tsv lines, the MS MARCO and BEIR shape and
// DPR's, with the fields taken verbatim (no quoting):
//
//	id<TAB>text
//	id<TAB>text<TAB>title
//
// The first line of the file may be a header (see isTSVHeader).
type tsvParser struct{}

func (tsvParser) parseLine(l []byte, first bool, want wantSet) (found, bool, *lineError) {
	id, text, title, le := parseTSVLine(l)
	if le != nil {
		return found{}, false, le
	}
	if first && isTSVHeader(id, text, title) {
		return found{}, false, nil
	}
	if !want.has(id) {
		return found{}, true, nil
	}
	return found{doc: Document{ID: string(id), Text: string(text), Title: string(title)}, field: "id"}, true, nil
}

// parseTSVLine splits a line into a non-empty id, a text (which may be
// empty) and a title (nil when the line has two fields). The results are
// slices of l.
func parseTSVLine(l []byte) (id, text, title []byte, le *lineError) {
	tabs := bytes.Count(l, []byte{'\t'})
	if tabs < 1 || tabs > 2 {
		hint := ""
		if tabs > 2 {
			hint = " (a tab inside the text?)"
		}
		return nil, nil, nil, &lineError{col: 1, err: fmt.Errorf("%w: want id<TAB>text or id<TAB>text<TAB>title, got %d fields%s", schema.ErrFieldCount, tabs+1, hint)}
	}
	i := bytes.IndexByte(l, '\t')
	id, rest := l[:i], l[i+1:]
	if len(id) == 0 {
		return nil, nil, nil, &lineError{col: 1, field: "id", err: schema.ErrEmptyID}
	}
	text = rest
	if j := bytes.IndexByte(rest, '\t'); j >= 0 {
		text, title = rest[:j], rest[j+1:]
		if title == nil {
			title = rest[j+1 : j+1]
		}
	}
	return id, text, title, nil
}

// isTSVHeader reports whether the fields of the first line of a file are
// column names rather than a document: an id name (id, _id, doc_id,
// docid, pid), a text name (text, contents, body, passage) and, with three
// fields, title.
func isTSVHeader(id, text, title []byte) bool {
	is := func(b []byte, names ...string) bool {
		for _, n := range names {
			if bytes.EqualFold(b, []byte(n)) {
				return true
			}
		}
		return false
	}
	return is(id, "id", "_id", "doc_id", "docid", "pid") &&
		is(text, "text", "contents", "body", "passage") &&
		(title == nil || is(title, "title"))
}
