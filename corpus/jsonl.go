package corpus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/evalgate/evalgate/schema"
)

// Field names accepted in JSONL and Parquet corpora. Each list names the
// aliases of one field: a line may give several only with the same value.
var (
	idKeys    = []string{"doc_id", "docid", "id", "_id"}
	textKeys  = []string{"text", "contents", "body"}
	titleKeys = []string{"title"}
)

// jsonlParser parses JSONL corpus lines:
//
//	{"_id": "d1", "title": "Aaron", "text": "Aaron is a prophet …"}
//	{"id": 17, "contents": "…"}
//
// A line whose first byte is '#' is a comment.
type jsonlParser struct{}

func (jsonlParser) parseLine(l []byte, _ bool, want wantSet) (found, bool, *lineError) {
	if l[0] == '#' {
		return found{}, false, nil
	}
	d, le := parseJSONLLine(l)
	if le != nil {
		return found{}, false, le
	}
	if !want.has(d.id) {
		return found{}, true, nil
	}
	doc, le := d.decode()
	if le != nil {
		return found{}, false, le
	}
	return found{doc: doc, field: d.idKey}, true, nil
}

// jsonlDoc is a valid corpus line, its strings not yet decoded.
type jsonlDoc struct {
	id          []byte // decoded
	idKey       string
	text, title json.RawMessage // JSON strings; title nil when absent
	textKey     string
}

// one returns the value of the first of keys present (and not null), and
// fails when two of them are present with different values: using either
// would silently drop the other.
func (m *members) one(keys []string) (string, json.RawMessage, *lineError) {
	var k1 string
	var v1 json.RawMessage
	for _, k := range keys {
		v := m.get(k)
		if v == nil || isNull(v) {
			continue
		}
		if v1 == nil {
			k1, v1 = k, v
			continue
		}
		if !sameJSON(v1, v) {
			return "", nil, &lineError{err: fmt.Errorf("%w: both %s and %s, with different values: give one", schema.ErrDuplicate, k1, k)}
		}
	}
	return k1, v1, nil
}

// sameJSON reports whether two valid JSON values are written the same,
// ignoring insignificant white space.
func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, a) != nil || json.Compact(&cb, b) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// parseJSONLLine parses and checks one line: a JSON object with an id (a
// non-empty string, or a number kept as written), a text (a string, which
// may be empty) and optionally a title (a string, or null). l is valid
// UTF-8.
func parseJSONLLine(l []byte) (jsonlDoc, *lineError) {
	if !json.Valid(l) {
		return jsonlDoc{}, syntaxError(l)
	}
	o, ok := scanMembers(l)
	if !ok {
		v := bytes.TrimSpace(l)
		return jsonlDoc{}, &lineError{col: 1, err: fmt.Errorf("%w: want a JSON object, got %s", schema.ErrTypeMismatch, abbreviate(v))}
	}
	var d jsonlDoc
	key, raw, le := o.one(idKeys)
	if le != nil {
		return jsonlDoc{}, le
	}
	if raw == nil {
		return jsonlDoc{}, &lineError{err: fmt.Errorf("%w: want a document id (%s)", schema.ErrMissingField, strings.Join(idKeys, ", "))}
	}
	id, err := jsonID(raw)
	if err != nil {
		return jsonlDoc{}, &lineError{field: key, err: err}
	}
	d.id, d.idKey = id, key
	key, raw, le = o.one(textKeys)
	if le != nil {
		return jsonlDoc{}, le
	}
	if raw == nil {
		return jsonlDoc{}, &lineError{err: fmt.Errorf("%w: want the passage text (%s)", schema.ErrMissingField, strings.Join(textKeys, ", "))}
	}
	if !isString(raw) {
		return jsonlDoc{}, &lineError{field: key, err: fmt.Errorf("%w: want a string, got %s", schema.ErrTypeMismatch, abbreviate(raw))}
	}
	d.text, d.textKey = raw, key
	key, raw, le = o.one(titleKeys)
	if le != nil {
		return jsonlDoc{}, le
	}
	if raw != nil && !isString(raw) {
		return jsonlDoc{}, &lineError{field: key, err: fmt.Errorf("%w: want a string, got %s", schema.ErrTypeMismatch, abbreviate(raw))}
	}
	d.title = raw
	return d, nil
}

// syntaxError describes why l, which json.Valid refused, is not JSON.
func syntaxError(l []byte) *lineError {
	var v json.RawMessage
	err := json.Unmarshal(l, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return &lineError{col: max(int(se.Offset), 1), err: fmt.Errorf("invalid JSON: %v", se)}
	}
	return &lineError{col: 1, err: fmt.Errorf("invalid JSON: %v", err)}
}

// decode decodes the strings of a checked line.
func (d jsonlDoc) decode() (Document, *lineError) {
	doc := Document{ID: string(d.id)}
	if err := json.Unmarshal(d.text, &doc.Text); err != nil {
		return Document{}, &lineError{field: d.textKey, err: fmt.Errorf("%w: %v", schema.ErrTypeMismatch, err)}
	}
	if d.title != nil {
		if err := json.Unmarshal(d.title, &doc.Title); err != nil {
			return Document{}, &lineError{field: titleKeys[0], err: fmt.Errorf("%w: %v", schema.ErrTypeMismatch, err)}
		}
	}
	return doc, nil
}

func isString(v json.RawMessage) bool {
	v = bytes.TrimSpace(v)
	return len(v) > 0 && v[0] == '"'
}

// jsonID decodes an id: a non-empty string, or a number kept as written.
// A string without escapes is returned as a slice of v.
func jsonID(v json.RawMessage) ([]byte, error) {
	v = bytes.TrimSpace(v)
	switch {
	case len(v) == 0:
		return nil, schema.ErrEmptyID
	case v[0] == '"':
		if s := v[1 : len(v)-1]; bytes.IndexByte(s, '\\') < 0 {
			if len(s) == 0 {
				return nil, schema.ErrEmptyID
			}
			return s, nil
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("%w: %v", schema.ErrTypeMismatch, err)
		}
		if s == "" {
			return nil, schema.ErrEmptyID
		}
		return []byte(s), nil
	case v[0] == '-' || v[0] >= '0' && v[0] <= '9':
		return v, nil
	}
	return nil, fmt.Errorf("%w: want a string or number id, got %s", schema.ErrTypeMismatch, abbreviate(v))
}

func abbreviate(v []byte) string {
	if len(v) > 40 {
		return string(v[:37]) + "..."
	}
	return string(v)
}
