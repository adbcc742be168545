package corpus

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
)

// ErrBadInput is wrapped by every error about the content of a corpus file.
var ErrBadInput = errors.New("bad corpus")

// MaxLineBytes is the longest line Reader accepts.
const MaxLineBytes = 16 << 20

// Doc is one document.
type Doc struct {
	ID    string
	Title string
	Text  string
}

// LineError is an error about one line of a corpus file.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

// Unwrap returns ErrBadInput and the cause, for errors.Is.
func (e *LineError) Unwrap() []error { return []error{ErrBadInput, e.Err} }

// Reader reads the documents of one corpus file in file order. It is not
// safe for concurrent use.
type Reader struct {
	name  string
	file  *os.File
	gz    *gzip.Reader
	lines *bufio.Scanner
	line  int
	seen  map[string]int // id -> line
}

// Open opens a corpus file for reading; the caller must Close it.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open corpus: %w", err)
	}
	r := &Reader{name: path, file: f, seen: map[string]int{}}
	br := bufio.NewReaderSize(f, 1<<16)
	var src io.Reader = br
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		r.gz, err = gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("open corpus %s: %w: %w", path, ErrBadInput, err)
		}
		src = r.gz
	}
	r.lines = bufio.NewScanner(src)
	r.lines.Buffer(make([]byte, 0, 1<<16), MaxLineBytes)
	return r, nil
}

// Next returns the next document, or io.EOF after the last one.
func (r *Reader) Next() (Doc, error) {
	for r.lines.Scan() {
		r.line++
		b := bytes.TrimSpace(r.lines.Bytes())
		if len(b) == 0 {
			continue
		}
		d, err := ParseLine(b)
		if err != nil {
			return Doc{}, &LineError{File: r.name, Line: r.line, Err: err}
		}
		if first, dup := r.seen[d.ID]; dup {
			return Doc{}, &LineError{File: r.name, Line: r.line, Err: fmt.Errorf("document id %q already on line %d", d.ID, first)}
		}
		r.seen[d.ID] = r.line
		return d, nil
	}
	if err := r.lines.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Doc{}, &LineError{File: r.name, Line: r.line + 1, Err: fmt.Errorf("line longer than %d bytes", MaxLineBytes)}
		}
		if errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) {
			return Doc{}, fmt.Errorf("read corpus %s after line %d: %w: %w", r.name, r.line, ErrBadInput, err)
		}
		return Doc{}, fmt.Errorf("read corpus %s: %w", r.name, err)
	}
	return Doc{}, io.EOF
}

// Close releases the file.
func (r *Reader) Close() error {
	if r.gz != nil {
		r.gz.Close()
	}
	return r.file.Close()
}

// line is the JSON shape of one document.
type line struct {
	DocID json.RawMessage `json:"doc_id"`
	UID   json.RawMessage `json:"_id"`
	ID    json.RawMessage `json:"id"`
	Title *string         `json:"title"`
	Text  *string         `json:"text"`
}

// ParseLine parses one line of a corpus file.
func ParseLine(b []byte) (Doc, error) {
	var l line
	if err := json.Unmarshal(b, &l); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return Doc{}, fmt.Errorf("key %q: want a string, got %s", typeErr.Field, typeErr.Value)
		}
		return Doc{}, fmt.Errorf("not a JSON object: %w", err)
	}
	key, raw := "doc_id", l.DocID
	if raw == nil {
		key, raw = "_id", l.UID
	}
	if raw == nil {
		key, raw = "id", l.ID
	}
	if raw == nil {
		return Doc{}, errors.New("no document id: want a doc_id, _id or id key")
	}
	id, err := parseID(raw)
	if err != nil {
		return Doc{}, fmt.Errorf("key %q: %w", key, err)
	}
	d := Doc{ID: id}
	if l.Title != nil {
		d.Title = *l.Title
	}
	if l.Text != nil {
		d.Text = *l.Text
	}
	return d, nil
}

// parseID reads a document id: a non-empty string or an integer.
func parseID(raw json.RawMessage) (string, error) {
	var s string
	if string(raw) == "null" {
		return "", errors.New("want a non-empty string or an integer, got null")
	}
	if err := json.Unmarshal(raw, &s); err == nil {
		if s == "" {
			return "", errors.New("empty document id")
		}
		return s, nil
	}
	if _, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return string(raw), nil
	}
	return "", fmt.Errorf("want a non-empty string or an integer, got %.40s", raw)
}

// Digest returns the SHA-256 of the file's bytes, as hex: what an index
// built from the file records, to recognise the file later.
func Digest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("open corpus: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read corpus %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
