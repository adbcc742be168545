package schema

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Sentinel kinds of input error; an *InputError wraps one of them (or a more
// specific error) so callers can test with errors.Is.
var (
	ErrFieldCount    = errors.New("wrong number of fields")
	ErrNumber        = errors.New("not a number")
	ErrNotFinite     = errors.New("score is not finite")
	ErrEmptyID       = errors.New("empty id")
	ErrInvalidUTF8   = errors.New("invalid UTF-8")
	ErrMissingField  = errors.New("missing field")
	ErrTypeMismatch  = errors.New("wrong type")
	ErrDuplicate     = errors.New("duplicate")
	ErrCorrupt       = errors.New("corrupt or truncated file")
	ErrUnknownFormat = errors.New("unknown format")
	ErrMissingColumn = errors.New("missing column")
	ErrNull          = errors.New("null value")
	ErrInvalidBatch  = errors.New("invalid shard batch")
	ErrWrongFileRole = errors.New("file holds the other kind of data")
	ErrNoData        = errors.New("no data")
	ErrLineEnds      = errors.New("unsupported line ends")
)

// InputError is a problem with one place of an input file.
type InputError struct {
	File   string // path as the user gave it
	Line   int64  // 1-based line for text formats; 0 if not known
	Row    int64  // 1-based row for Arrow and Parquet; 0 if not known
	Column int    // 1-based field or byte column; 0 if not known
	Field  string // field or column name, if any
	Err    error
}

// Error renders "file:line:col: field "x": cause" (or "file: row N: …").
func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	switch {
	case e.Line > 0:
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	case e.Row > 0:
		fmt.Fprintf(&b, ": row %d", e.Row)
	}
	b.WriteString(": ")
	if e.Field != "" {
		fmt.Fprintf(&b, "%s %q: ", fieldWord(e), e.Field)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func fieldWord(e *InputError) string {
	if e.Row > 0 {
		return "column"
	}
	return "field"
}

// Unwrap returns the cause.
func (e *InputError) Unwrap() error { return e.Err }

// position orders errors by file, then line or row.
func (e *InputError) position() (string, int64) {
	if e.Line > 0 {
		return e.File, e.Line
	}
	return e.File, e.Row
}

// ErrorList collects input errors. The zero value is empty and ready to use.
// It keeps the first Limit errors in full (by file and position) and counts
// the rest.
type ErrorList struct {
	Limit   int // errors kept in full; 0 means DefaultErrorLimit
	errs    []*InputError
	dropped int
}

// DefaultErrorLimit is the number of errors shown in full.
const DefaultErrorLimit = 10

func (l *ErrorList) limit() int {
	if l.Limit <= 0 {
		return DefaultErrorLimit
	}
	return l.Limit
}

// Add records an error. An *ErrorList is merged (every error it holds,
// and its count of dropped ones); errors that are not *InputError are
// wrapped in one without a position.
func (l *ErrorList) Add(err error) {
	if err == nil {
		return
	}
	var el *ErrorList
	if errors.As(err, &el) {
		l.Merge(el)
		return
	}
	var ie *InputError
	if !errors.As(err, &ie) {
		ie = &InputError{Err: err}
	}
	l.errs = append(l.errs, ie)
	if len(l.errs) > 4*l.limit() {
		l.trim()
	}
}

// AddCount records n errors that are counted but not kept in full (they
// come after the ones kept).
func (l *ErrorList) AddCount(n int) { l.dropped += n }

// Merge adds every error of o.
func (l *ErrorList) Merge(o *ErrorList) {
	if o == nil {
		return
	}
	l.errs = append(l.errs, o.errs...)
	l.dropped += o.dropped
	l.trim()
}

// trim sorts by position and keeps the first limit errors.
func (l *ErrorList) trim() {
	sort.SliceStable(l.errs, func(i, j int) bool {
		fi, pi := l.errs[i].position()
		fj, pj := l.errs[j].position()
		if fi != fj {
			return fi < fj
		}
		return pi < pj
	})
	if n := l.limit(); len(l.errs) > n {
		l.dropped += len(l.errs) - n
		l.errs = l.errs[:n]
	}
}

// Len returns the number of errors recorded, shown or not.
func (l *ErrorList) Len() int { return len(l.errs) + l.dropped }

// Errors returns the errors kept in full, ordered by file and position.
func (l *ErrorList) Errors() []*InputError {
	l.trim()
	return l.errs
}

// Err returns nil when the list is empty, the single error when there is
// one, and the list otherwise.
func (l *ErrorList) Err() error {
	switch l.Len() {
	case 0:
		return nil
	case 1:
		l.trim()
		return l.errs[0]
	}
	l.trim()
	return l
}

// Error lists the kept errors one per line and ends "(and N more errors)".
func (l *ErrorList) Error() string {
	l.trim()
	var b strings.Builder
	for i, e := range l.errs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	if l.dropped > 0 {
		fmt.Fprintf(&b, "\n(and %d more errors)", l.dropped)
	}
	return b.String()
}

// Unwrap exposes the kept errors to errors.Is and errors.As.
func (l *ErrorList) Unwrap() []error {
	out := make([]error, len(l.errs))
	for i, e := range l.errs {
		out[i] = e
	}
	return out
}

// IsInvalidInput reports whether err is caused by bad input (as opposed to
// an I/O or system failure): the input must be fixed, retrying cannot help.
func IsInvalidInput(err error) bool {
	var ie *InputError
	if errors.As(err, &ie) {
		return true
	}
	var il *ErrorList
	return errors.As(err, &il)
}
