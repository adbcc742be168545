package schema

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow/go/v16/arrow"
)

// maxBlockErrors bounds the errors one block keeps in full; the rest are
// counted. The reader keeps the first ones of the whole file.
const maxBlockErrors = 64

// lineScanner walks the lines of a block, skipping blank lines and lines
// whose first byte is '#' (a comment; '#' elsewhere is data, as in
// MS MARCO v2.1 segment ids).
type lineScanner struct {
	data []byte
	line int64 // 1-based number of the current line within the block
}

// next returns the next non-blank, non-comment line without its line end.
func (s *lineScanner) next() ([]byte, bool) {
	for len(s.data) > 0 {
		s.line++
		var l []byte
		if i := bytes.IndexByte(s.data, '\n'); i >= 0 {
			l, s.data = s.data[:i], s.data[i+1:]
		} else {
			l, s.data = s.data, nil
		}
		if n := len(l); n > 0 && l[n-1] == '\r' {
			l = l[:n-1]
		}
		if len(l) == 0 || l[0] == '#' || isBlank(l) {
			continue
		}
		return l, true
	}
	return nil, false
}

func isBlank(l []byte) bool {
	for _, c := range l {
		if c != ' ' && c != '\t' && c != '\r' && c != '\v' && c != '\f' {
			return false
		}
	}
	return true
}

// fieldScanner yields the fields of each data line of a block. Lines that
// are not valid UTF-8 are reported to errs and skipped; the check runs per
// line only when the block as a whole failed it.
type fieldScanner struct {
	lineScanner
	checkUTF8 bool
	fs        []field
	errs      *blockErrors
}

func newFieldScanner(data []byte, maxFields int, errs *blockErrors) fieldScanner {
	return fieldScanner{lineScanner: lineScanner{data: data}, checkUTF8: !blockUTF8(data),
		fs: make([]field, 0, maxFields), errs: errs}
}

// next returns the next data line's first maxFields fields and its total
// number of fields, or ok false at the end of the block.
func (s *fieldScanner) next() (fs []field, n int, ok bool) {
	l, ok := s.nextLine()
	if !ok {
		return nil, 0, false
	}
	s.fs, n = splitFieldsFast(l, s.fs)
	return s.fs, n, true
}

// nextLine returns the next data line, or ok false at the end of the
// block.
func (s *fieldScanner) nextLine() ([]byte, bool) {
	for {
		l, ok := s.lineScanner.next()
		if !ok {
			return nil, false
		}
		if s.checkUTF8 {
			if col, bad := invalidUTF8(l); bad {
				s.errs.add(s.line, col, "", ErrInvalidUTF8)
				continue
			}
		}
		return l, true
	}
}

// field is one whitespace-separated field of a line and its 1-based column.
type field struct {
	b   []byte
	col int
}

// splitFields splits l on runs of spaces and tabs into out (up to its
// capacity) and returns the total number of fields.
func splitFields(l []byte, out []field) ([]field, int) {
	out = out[:0]
	n := 0
	i := 0
	for i < len(l) {
		for i < len(l) && (l[i] == ' ' || l[i] == '\t') {
			i++
		}
		if i == len(l) {
			break
		}
		start := i
		for i < len(l) && l[i] != ' ' && l[i] != '\t' {
			i++
		}
		if len(out) < cap(out) {
			out = append(out, field{b: l[start:i], col: start + 1})
		}
		n++
	}
	return out, n
}

// blockErrors collects a block's errors, keeping the first maxBlockErrors.
type blockErrors struct {
	file    string
	errs    []*InputError
	dropped int
}

func (b *blockErrors) add(line int64, col int, fieldName string, err error) {
	if len(b.errs) >= maxBlockErrors {
		b.dropped++
		return
	}
	b.errs = append(b.errs, &InputError{File: b.file, Line: line, Column: col, Field: fieldName, Err: err})
}

// result attaches the errors to res.
func (b *blockErrors) result(res blockResult) blockResult {
	res.errs = b.errs
	res.dropped = b.dropped
	return res
}

// blockUTF8 reports whether a whole block is valid UTF-8, so that the
// per-line check can be skipped (one pass over 4 MiB of ASCII is much
// cheaper than millions of short calls).
func blockUTF8(data []byte) bool { return utf8.Valid(data) }

func invalidUTF8(l []byte) (int, bool) {
	if utf8.Valid(l) {
		return 0, false
	}
	for i := 0; i < len(l); {
		r, size := utf8.DecodeRune(l[i:])
		if r == utf8.RuneError && size <= 1 {
			return i + 1, true
		}
		i += size
	}
	return 1, true
}

func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// parseInt32 parses a decimal integer that fits in int32.
func parseInt32(b []byte) (int32, error) {
	v, err := strconv.ParseInt(unsafeString(b), 10, 32)
	if err != nil {
		return 0, err
	}
	return int32(v), nil
}

// parseScore parses a finite float64 in the syntax C's strtod reads
// (trec_eval uses atof): decimal or hexadecimal, with an optional
// exponent. strconv.ParseFloat also accepts Go's digit separators, which
// atof stops at ("1_0" is 10 to Go, 1 to trec_eval): those are refused,
// never read differently from the reference.
func parseScore(b []byte) (float64, error) {
	if bytes.IndexByte(b, '_') >= 0 {
		return 0, fmt.Errorf("%w: %q (digit separators are not allowed)", ErrNumber, b)
	}
	v, err := strconv.ParseFloat(unsafeString(b), 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("%w: %q is out of the float64 range", ErrNotFinite, b)
		}
		return 0, fmt.Errorf("%w: %q", ErrNumber, b)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%w: %q", ErrNotFinite, b)
	}
	return v, nil
}

// sizeBlock estimates the arrays a block needs: its line count (exact
// upper bound) and, from its first data line, the length of two fields
// with some slack. Reserving much more than needed costs real time: large
// allocations are zeroed, and first touching their pages is expensive.
func sizeBlock(data []byte, f1, f2 int) (lines, len1, len2 int) {
	lines = bytes.Count(data, []byte{'\n'}) + 1
	sc := lineScanner{data: data}
	l, ok := sc.next()
	if !ok {
		return lines, 8, 8
	}
	fs, n := splitFieldsFast(l, make([]field, 0, 8))
	if n <= max(f1, f2) {
		return lines, 16, 16
	}
	return lines, len(fs[f1].b) + len(fs[f1].b)/4 + 2, len(fs[f2].b) + len(fs[f2].b)/4 + 2
}

// parseQrelsBlock parses TREC qrels lines: query_id iteration doc_id grade.
func parseQrelsBlock(file string, data []byte) blockResult {
	est, qidLen, docLen := sizeBlock(data, 0, 2)
	qids := NewStrings(est, est*qidLen)
	docs := NewStrings(est, est*docLen)
	grades := make([]int32, 0, est)
	lines := make([]int64, 0, est)
	errs := blockErrors{file: file}
	sc := newFieldScanner(data, 4, &errs)
	for {
		l, ok := sc.nextLine()
		if !ok {
			break
		}
		qid, doc, grade, gradeCol, n := qrelsFields(l, sc.fs)
		if n != 4 {
			hint := ""
			if n >= 6 {
				hint = "; this looks like a TREC run line: pass the file as the run"
			}
			errs.add(sc.line, 0, "", fmt.Errorf("%w: want 4 (query_id iteration doc_id grade), got %d%s", ErrFieldCount, n, hint))
			continue
		}
		g, err := parseGrade(grade)
		if err != nil {
			errs.add(sc.line, gradeCol, FieldGrade, err)
			continue
		}
		qids.AppendBytes(qid)
		docs.AppendBytes(doc)
		grades = append(grades, g)
		lines = append(lines, sc.line)
	}
	res := blockResult{nLines: sc.line, lines: lines}
	if len(errs.errs) == 0 {
		res.rec = NewRecord(GoldLong(), []arrow.Array{qids.Array(), docs.Array(), Int32Array(grades, nil)}, len(grades))
	}
	return errs.result(res)
}

// parseGrade parses a qrels grade: an integer, or a decimal number whose
// value is the integer trec_eval reads from it — trec_eval reads grades
// with atol, which stops at the first character that is not a digit, so
// "1.0" and "1e0" are 1 to both. Anything else is an error, never a value
// that differs from trec_eval's: "0.5" is not an integer, and "10e-1" is
// 1 but 10 to atol.
func parseGrade(b []byte) (int32, error) {
	if g, err := parseInt32Fast(b); err == nil {
		return g, nil
	}
	bad := fmt.Errorf("%w: want an integer, got %q", ErrNumber, b)
	end := 0
	if end < len(b) && (b[0] == '+' || b[0] == '-') {
		end++
	}
	for end < len(b) && b[end] >= '0' && b[end] <= '9' {
		end++
	}
	prefix, err := parseInt32(b[:end])
	if err != nil {
		return 0, bad
	}
	v, err := parseScore(b)
	if err != nil || v != math.Trunc(v) {
		return 0, bad
	}
	if v != float64(prefix) {
		return 0, fmt.Errorf("%w: want an integer, got %q (its value is %v, but trec_eval reads it as %d)", ErrNumber, b, v, prefix)
	}
	return prefix, nil
}

// parseTRECRunBlock parses TREC run lines:
// query_id Q0 doc_id rank score run_tag, ignoring further fields as
// trec_eval does. A rank that is not an integer is kept as null: it matters
// only with --rank-by rank.
func parseTRECRunBlock(file string, data []byte) blockResult {
	return parseTRECRun(file, data, nil, false)
}

// parseTRECRun is parseTRECRunBlock with the record's columns in memory
// from mem (nil: new memory). With skipRanks the rank field is not read:
// every rank is null (Options.SkipRanks); the line must still have it.
func parseTRECRun(file string, data []byte, mem *recycler, skipRanks bool) blockResult {
	est, qidLen, docLen := sizeBlock(data, 0, 2)
	qids := newRecycledStrings(mem, est, est*qidLen)
	docs := newRecycledStrings(mem, est, est*docLen)
	scores := recycledSlice[float64](mem, est)[:0]
	ranks := rankParser{skip: skipRanks}
	if !skipRanks {
		ranks.ranks = recycledSlice[int32](mem, est)[:0]
	}
	lines := make([]int64, 0, est)
	errs := blockErrors{file: file}
	sc := newFieldScanner(data, 5, &errs)
	for {
		fs, n, ok := sc.next()
		if !ok {
			break
		}
		if n < 6 {
			hint := ""
			if n == 4 {
				hint = "; this looks like a qrels line: pass the file as the gold set"
			}
			errs.add(sc.line, 0, "", fmt.Errorf("%w: want 6 (query_id Q0 doc_id rank score run_tag), got %d%s", ErrFieldCount, n, hint))
			continue
		}
		score, err := parseScoreFast(fs[4].b)
		if err != nil {
			errs.add(sc.line, fs[4].col, FieldScore, err)
			continue
		}
		ranks.add(fs[3].b)
		qids.AppendBytes(fs[0].b)
		docs.AppendBytes(fs[2].b)
		scores = append(scores, score)
		lines = append(lines, sc.line)
	}
	res := blockResult{nLines: sc.line, lines: lines}
	if len(errs.errs) == 0 {
		res.rec = NewRecord(RunLong(), []arrow.Array{qids.arrayOf(nil, mem), docs.arrayOf(nil, mem),
			wrapFixed(arrow.PrimitiveTypes.Float64, scores, nil, mem), ranks.array(len(scores), mem)}, len(scores))
	}
	return errs.result(res)
}

// rankParser gathers the ranks of a block's lines: each an integer, or
// null when the field is not one (it matters only with --rank-by rank);
// with skip it reads none and every rank is null.
type rankParser struct {
	skip  bool
	ranks []int32
	valid []bool // allocated at the first bad rank
}

// add takes the rank field of a line; it inlines, so that a block read
// without its ranks costs no call a line.
func (p *rankParser) add(field []byte) {
	if !p.skip {
		p.parse(field)
	}
}

func (p *rankParser) parse(field []byte) {
	rank, err := parseInt32Fast(field)
	if err != nil && p.valid == nil {
		p.valid = make([]bool, len(p.ranks), cap(p.ranks))
		for i := range p.valid {
			p.valid[i] = true
		}
	}
	if p.valid != nil {
		p.valid = append(p.valid, err == nil)
	}
	p.ranks = append(p.ranks, rank)
}

// array returns the rank column of n lines.
func (p *rankParser) array(n int, mem *recycler) arrow.Array {
	if p.skip {
		return NullInt32Array(n)
	}
	return wrapFixed(arrow.PrimitiveTypes.Int32, p.ranks, p.valid, mem)
}
