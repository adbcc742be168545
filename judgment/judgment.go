package judgment

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/evalgate/evalgate/schema"
)

// Judgment is one graded (query, document) pair.
type Judgment struct {
	QueryID      string `json:"query_id"`
	DocID        string `json:"doc_id"`
	Grade        int    `json:"grade"`
	Model        string `json:"model"`
	PromptSHA256 string `json:"prompt_sha256"`
	Reason       string `json:"reason,omitempty"`
	// HumanGrade is set on a re-judged pair: the gold set's grade of it.
	HumanGrade *int `json:"human_grade,omitempty"`
}

// Rejudged reports whether the pair was graded again to measure agreement
// (it has a human grade): such a judgment never fills the gold set.
func (j *Judgment) Rejudged() bool { return j.HumanGrade != nil }

// Set is the judgments of one or more files.
type Set struct {
	Judgments []Judgment
	// Repeats counts identical judgments given again (kept once).
	Repeats int64
	// where records the file and line of each pair, for conflicts.
	where map[pairKey]string
}

type pairKey struct{ query, doc string }

// ReadFile adds the judgments of a file to the set.
func (s *Set) ReadFile(path string) error {
	r, err := schema.OpenStream(path)
	if err != nil {
		return err
	}
	defer r.Close()
	return s.Read(path, r)
}

// Read adds the judgments read from r (named file in errors). Every bad
// line is reported, up to schema's error limit.
func (s *Set) Read(file string, r io.Reader) error {
	if s.where == nil {
		s.where = map[pairKey]string{}
	}
	var errs schema.ErrorList
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	index := map[pairKey]int{}
	for i, j := range s.Judgments {
		index[pairKey{j.QueryID, j.DocID}] = i
	}
	for line := int64(1); sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if line == 1 {
			text = bytes.TrimPrefix(text, []byte("\ufeff"))
		}
		if len(text) == 0 {
			continue
		}
		j, field, err := parseLine(text)
		if err != nil {
			errs.Add(&schema.InputError{File: file, Line: line, Field: field, Err: err})
			continue
		}
		k := pairKey{j.QueryID, j.DocID}
		here := fmt.Sprintf("%s:%d", file, line)
		if at, seen := index[k]; seen {
			prev := s.Judgments[at]
			if prev.Grade != j.Grade || prev.Rejudged() != j.Rejudged() {
				errs.Add(&schema.InputError{File: file, Line: line, Field: "grade", Err: fmt.Errorf(
					"%w: query %q doc %q has grade %d here and %d at %s", schema.ErrDuplicate, j.QueryID, j.DocID, j.Grade, prev.Grade, s.where[k])})
				continue
			}
			s.Repeats++
			continue
		}
		index[k] = len(s.Judgments)
		s.where[k] = here
		s.Judgments = append(s.Judgments, j)
	}
	if err := sc.Err(); err != nil {
		var ie *schema.InputError
		if errors.As(err, &ie) {
			errs.Add(ie)
		} else {
			errs.Add(&schema.InputError{File: file, Err: fmt.Errorf("read: %w", err)})
		}
	}
	return errs.Err()
}

// parseLine decodes one line; field names the bad field on error.
func parseLine(text []byte) (Judgment, string, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(text, &raw); err != nil {
		return Judgment{}, "", fmt.Errorf("invalid JSON: %v", err)
	}
	var j Judgment
	str := func(key string, dst *string, required bool) error {
		v, ok := raw[key]
		if !ok {
			if required {
				return fmt.Errorf("%w: want %s", schema.ErrMissingField, key)
			}
			return nil
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return fmt.Errorf("%w: want a string", schema.ErrTypeMismatch)
		}
		if required && *dst == "" {
			return fmt.Errorf("%w: empty", schema.ErrMissingField)
		}
		return nil
	}
	for _, f := range []struct {
		key      string
		dst      *string
		required bool
	}{{"query_id", &j.QueryID, true}, {"doc_id", &j.DocID, true}, {"model", &j.Model, false},
		{"prompt_sha256", &j.PromptSHA256, false}, {"reason", &j.Reason, false}} {
		if err := str(f.key, f.dst, f.required); err != nil {
			return j, f.key, err
		}
	}
	grade, err := integer(raw, "grade", true)
	if err != nil {
		return j, "grade", err
	}
	j.Grade = *grade
	if j.HumanGrade, err = integer(raw, "human_grade", false); err != nil {
		return j, "human_grade", err
	}
	return j, "", nil
}

// integer reads an integer field: a JSON number with no fraction.
func integer(raw map[string]json.RawMessage, key string, required bool) (*int, error) {
	v, ok := raw[key]
	if !ok || string(v) == "null" {
		if required {
			return nil, fmt.Errorf("%w: want %s, an integer", schema.ErrMissingField, key)
		}
		return nil, nil
	}
	var n json.Number
	if err := json.Unmarshal(v, &n); err != nil || bytes.HasPrefix(v, []byte(`"`)) {
		return nil, fmt.Errorf("%w: want an integer, got %s", schema.ErrTypeMismatch, v)
	}
	x, err := n.Int64()
	if err != nil || x < -1<<31 || x > 1<<31-1 {
		return nil, fmt.Errorf("%w: want an integer, got %s", schema.ErrNumber, n)
	}
	i := int(x)
	return &i, nil
}

// Write writes judgments as JSONL, sorted by query then doc id.
func Write(w io.Writer, js []Judgment) error {
	sorted := slices.Clone(js)
	slices.SortFunc(sorted, func(a, b Judgment) int {
		return cmp.Or(strings.Compare(a.QueryID, b.QueryID), strings.Compare(a.DocID, b.DocID))
	})
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for i := range sorted {
		if err := enc.Encode(&sorted[i]); err != nil {
			return fmt.Errorf("write judgments: %w", err)
		}
	}
	return bw.Flush()
}
