package schema

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/apache/arrow/go/v16/arrow/ipc"
	"github.com/apache/arrow/go/v16/arrow/memory"
	"github.com/apache/arrow/go/v16/parquet"
	"github.com/apache/arrow/go/v16/parquet/file"
	"github.com/apache/arrow/go/v16/parquet/pqarrow"
)

// recordSource yields the records of an Arrow or Parquet file. The record
// is valid until the next call.
type recordSource interface {
	schema() *arrow.Schema       // the file's schema, known before any record
	next() (arrow.Record, error) // io.EOF at the end
	close() error
}

// columnarReader reads Arrow IPC and Parquet files in any of the input forms
// and returns batches in the canonical schemas.
type columnarReader struct {
	file string
	role Role
	form Form
	src  recordSource
	row  int64 // 1-based row number of the next record's first row
	errs ErrorList
	done bool

	workers int
	// limit bounds the bytes of ids a record may expand to (run-end or
	// dictionary encoded): AllocationLimit of the file's size.
	limit   int
	pipe    *pipeline
	pending []normalized      // results of the current unit not yet handed out
	orphan  chan []normalized // a unit's results abandoned by a cancelled Next

	closeOnce sync.Once
	closeErr  error
}

func openColumnar(_ context.Context, path string, role Role, format Format, opts Options) (Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	var src recordSource
	err = protect(func() error {
		info, err := f.Stat()
		if err != nil {
			return err
		}
		// Check the framing before the Arrow reader trusts its lengths, and
		// bound what it may allocate (see CheckIPCFile).
		opts.Allocator = LimitedAllocator{Allocator: opts.Allocator, Limit: AllocationLimit(info.Size())}
		switch format {
		case FormatArrow:
			if err := CheckIPCFile(f, info.Size()); err != nil {
				return err
			}
			src, err = newIPCFileSource(f, info.Size(), opts)
		case FormatArrowStream:
			if err := CheckIPCStream(f, info.Size()); err != nil {
				return err
			}
			src, err = newIPCStreamSource(f, opts)
		default:
			src, err = newParquetSource(f, role, opts)
		}
		return err
	})
	if err != nil {
		f.Close()
		return nil, &InputError{File: path, Err: fmt.Errorf("%w: %s: %v", ErrCorrupt, format, err)}
	}
	if err := checkRole(path, src.schema(), role); err != nil {
		src.close()
		return nil, err
	}
	r := &columnarReader{file: path, role: role, src: src, row: 1, workers: opts.Parallelism, limit: allocationLimitOf(opts.Allocator)}
	r.errs.Limit = opts.MaxErrors
	return r, nil
}

// protect runs fn, turning a panic inside the Arrow or Parquet libraries
// (which trust their input more than we do) into an error.
func protect(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed data: %v", p)
		}
	}()
	return fn()
}

func (r *columnarReader) Form() Form { return r.form }

// The value columns that mark a columnar file as a gold set or as a run
// (those DetectRole looks for).
var (
	goldValueColumns = []string{FieldGrade, FieldGrades, "relevance", "rel"}
	runValueColumns  = []string{FieldScore, FieldScores, FieldRank}
)

// schemaRole tells from a file's schema whether it holds a gold set or a
// run: by its value columns when they are of one kind only (grades, or
// scores and ranks), else by the form named in its evalgate.form metadata.
// It returns 0 when neither tells: a list of doc_ids alone reads as a gold
// set with binary relevance or as a run ranked by position, and a file
// with both grades and scores (a run annotated with judgments) as either.
// why describes what told.
func schemaRole(s *arrow.Schema) (role Role, why string) {
	names := make([]string, 0, s.NumFields())
	gold, run := false, false
	for _, f := range s.Fields() {
		names = append(names, f.Name)
		gold = gold || slices.Contains(goldValueColumns, f.Name)
		run = run || slices.Contains(runValueColumns, f.Name)
	}
	if len(names) > 8 {
		names = append(names[:8], "…")
	}
	columns := "columns " + strings.Join(names, ", ")
	switch {
	case gold && !run:
		return RoleGold, columns
	case run && !gold:
		return RoleRun, columns
	}
	md := s.Metadata()
	if i := md.FindKey(MetaForm); i >= 0 {
		declared := MetaForm + " " + md.Values()[i] + ", " + columns
		switch md.Values()[i] {
		case FormGoldLong.String(), FormGoldList.String():
			return RoleGold, declared
		case FormRunLong.String(), FormRunList.String():
			return RoleRun, declared
		}
	}
	return 0, columns
}

// checkRole refuses a file opened as one role whose schema says it holds
// the other, before any row is read as what it is not (a run read as a
// gold set would count every retrieved document as relevant).
func checkRole(path string, s *arrow.Schema, role Role) error {
	holds, why := schemaRole(s)
	if holds == 0 || holds == role {
		return nil
	}
	what, as := "a run file", "the run"
	if holds == RoleGold {
		what, as = "a gold file", "the gold set"
	}
	return &InputError{File: path, Err: fmt.Errorf("%w: this is %s (%s): pass the file as %s", ErrWrongFileRole, what, why, as)}
}

func (r *columnarReader) Next(ctx context.Context) (*Batch, error) {
	if r.pipe == nil && !r.done {
		r.startPipeline(max(r.workers, 1))
	}
	for !r.done {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		res, ok, err := r.nextNormalized(ctx)
		if err != nil {
			return nil, err
		}
		if !ok {
			r.done = true
			break
		}
		if res.readErr != nil {
			r.done = true
			r.errs.Add(&InputError{File: r.file, Row: r.row, Err: fmt.Errorf("%w: %v", ErrCorrupt, res.readErr)})
			break
		}
		first := r.row
		r.row += res.rows
		if res.rows == 0 {
			continue
		}
		if res.err == nil && r.form != FormUnknown && res.form != r.form {
			res.release()
			res.err = fmt.Errorf("%w: record holds %s rows after %s rows", ErrCorrupt, res.form, r.form)
		}
		if res.err != nil {
			r.done = true
			r.errs.Add(&InputError{File: r.file, Row: first, Err: res.err})
			break
		}
		r.form = res.form
		res.errs.rebase(first)
		r.errs.Merge(&res.errs)
		if r.errs.Len() > 0 {
			res.release()
			continue
		}
		return &Batch{Record: res.out, Form: r.form, File: r.file, FirstRow: first}, nil
	}
	r.stopPipeline()
	if err := r.errs.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}

func (r *columnarReader) Close() error {
	r.closeOnce.Do(func() {
		r.stopPipeline()
		r.closeErr = r.src.close()
	})
	return r.closeErr
}

// The names a column may have in a file, the canonical one first.
var (
	queryIDNames = []string{FieldQueryID, "qid"}
	gradeNames   = []string{FieldGrade, "relevance", "rel"}
)

// readColumns holds the names of every column the readers read (each
// entry one column's names); a file's other columns are left unread and
// unchecked.
var readColumns = [][]string{queryIDNames, {FieldDocID}, {FieldDocIDs}, gradeNames, {FieldGrades},
	{FieldQuery}, {FieldTags}, {FieldScore}, {FieldScores}, {FieldRank}}

// column finds a column by any of its accepted names.
func column(rec arrow.Record, names ...string) (int, arrow.Array) {
	if i := fieldIndex(rec.Schema(), names...); i >= 0 {
		return i, rec.Column(i)
	}
	return -1, nil
}

// normalize converts a record of the file into the canonical schema of its
// form, validating every value.
func (r *columnarReader) normalize(rec arrow.Record, first int64, errs *ErrorList) (arrow.Record, Form, error) {
	for i, c := range rec.Columns() {
		if err := checkLengths(c.Data(), 0); err != nil {
			return nil, FormUnknown, fmt.Errorf("column %s: %v", rec.ColumnName(i), err)
		}
	}
	form, err := recordForm(rec, r.role)
	if err != nil {
		return nil, form, err
	}
	if err := checkExpansion(rec, r.limit); err != nil {
		return nil, form, err
	}
	out, err := normalizeAs(r.file, form, rec, first, errs)
	return out, form, err
}

// checkExpansion refuses a record whose columns the readers read could
// not be read within limit bytes an allocation (0: no limit). A run-end encoded column has no
// buffer sized by its rows, and a run-end or dictionary encoded column or
// a view can name a long string for every row, so a few bytes of a file
// can stand for more rows or bytes than it holds; the reader copies such
// ids one a row when it does not take them as they are (a bad id, a gold
// set, a conversion to Parquet). So every array of those columns, nested
// ones included, may have at most limit/8 values (the 8-byte values of the
// widest column the reader builds), and the string values of each column,
// one a row, may take at most limit bytes and no more than a utf8
// column's int32 offsets address.
func checkExpansion(rec arrow.Record, limit int) error {
	if limit <= 0 {
		return nil
	}
	budget := expansionBudget{values: int64(limit) / 8, bytes: int64(min(limit, math.MaxInt32))}
	for _, names := range readColumns {
		i, c := column(rec, names...)
		if c == nil {
			continue
		}
		n, err := budget.expandedBytes(c)
		if err != nil {
			return fmt.Errorf("column %s: %w", rec.ColumnName(i), err)
		}
		if n > budget.bytes {
			if budget.bytes < int64(limit) {
				return fmt.Errorf("column %s: its values take more than %d bytes one a row, more than a utf8 column holds: write the file in smaller record batches", rec.ColumnName(i), budget.bytes)
			}
			return fmt.Errorf("column %s: its values take more than %d bytes one a row, more than a file of this size can hold", rec.ColumnName(i), budget.bytes)
		}
	}
	return nil
}

// expansionBudget is what checkExpansion allows an array: values, at most
// this many (rows, or values of a nested array); bytes, of string values
// one a row.
type expansionBudget struct {
	values, bytes int64
}

// expandedBytes returns the bytes the string values of a take one a row,
// or a number past b.bytes once they take more (it stops counting there).
// It counts run-end and dictionary encoded strings, views and strings
// with 64-bit offsets, and the children of lists, maps and structs; a
// utf8 array's own int32 offsets bound its bytes, and other arrays hold
// no strings. Its recursion follows the children checkLengths walks first,
// which bounds their nesting.
func (b expansionBudget) expandedBytes(a arrow.Array) (int64, error) {
	if int64(a.Len()) > b.values {
		return 0, fmt.Errorf("%d values, more than the %d a file of this size can hold", a.Len(), b.values)
	}
	switch c := a.(type) {
	case *array.RunEndEncoded:
		if err := checkRunEnds(c); err != nil {
			return 0, err
		}
		if _, err := b.expandedBytes(c.Values()); err != nil {
			return 0, err
		}
		valueLen, ok := valueLengths(c.Values())
		if !ok {
			return 0, nil // not strings: refused by type where ids are read
		}
		at, _ := runEndsOf(c)
		lo, hi := int64(c.Data().Offset()), int64(c.Data().Offset()+c.Len())
		var sum byteCount
		prev := int64(0)
		for k := range c.Values().Len() {
			end := at(k)
			if rows := min(end, hi) - max(prev, lo); rows > 0 {
				if err := sum.add(rows, valueLen(k), b.bytes); err != nil || sum.n > b.bytes {
					return sum.n, err
				}
			}
			prev = end
		}
		return sum.n, nil
	case *array.Dictionary, *array.LargeString, *array.Binary, *array.LargeBinary, *array.StringView, *array.BinaryView:
		if d, ok := c.(*array.Dictionary); ok {
			if _, err := b.expandedBytes(d.Dictionary()); err != nil {
				return 0, err
			}
		}
		valueLen, ok := valueLengths(c)
		if !ok {
			return 0, nil
		}
		var sum byteCount
		for i := range c.Len() {
			if err := sum.add(1, valueLen(i), b.bytes); err != nil || sum.n > b.bytes {
				return sum.n, err
			}
		}
		return sum.n, nil
	case array.ListLike: // lists and maps
		return b.expandedBytes(c.ListValues())
	case *array.Struct:
		var total int64
		for f := range c.NumField() {
			n, err := b.expandedBytes(c.Field(f))
			if err != nil {
				return 0, err
			}
			if total += n; total > b.bytes {
				return total, nil
			}
		}
		return total, nil
	}
	return 0, nil
}

// byteCount adds rows·length products, refusing negative lengths (offsets
// that decrease) and saturating past a bound rather than overflowing.
type byteCount struct{ n int64 }

func (s *byteCount) add(rows int64, length int, bound int64) error {
	if length < 0 {
		return fmt.Errorf("a value of negative length %d", length)
	}
	if length > 0 && rows > (bound-s.n)/int64(length) {
		s.n = bound + 1
		return nil
	}
	s.n += rows * int64(length)
	return nil
}

// valueLengths returns the byte length of each value of a string or
// binary array, or of a dictionary of them (0 for an index out of its
// range, which the readers refuse), ok false for other arrays.
func valueLengths(a arrow.Array) (func(i int) int, bool) {
	switch c := a.(type) {
	case *array.Dictionary:
		inner, ok := valueLengths(c.Dictionary())
		if !ok {
			return nil, false
		}
		n := c.Dictionary().Len()
		return func(i int) int {
			if j := c.GetValueIndex(i); j >= 0 && j < n {
				return inner(j)
			}
			return 0
		}, true
	case *array.String:
		return c.ValueLen, true
	case *array.LargeString:
		return c.ValueLen, true
	case *array.Binary:
		return c.ValueLen, true
	case *array.LargeBinary:
		return c.ValueLen, true
	case *array.StringView:
		return c.ValueLen, true
	case *array.BinaryView:
		return c.ValueLen, true
	}
	return nil, false
}

// recordForm tells the form of a record read as role from its columns.
func recordForm(rec arrow.Record, role Role) (Form, error) {
	_, qcol := column(rec, queryIDNames...)
	if qcol == nil {
		return FormUnknown, missingColumns(rec, FieldQueryID)
	}
	_, docList := column(rec, FieldDocIDs)
	_, docCol := column(rec, FieldDocID)
	switch {
	case role == RoleGold && docList != nil:
		return FormGoldList, nil
	case role == RoleGold && docCol != nil:
		return FormGoldLong, nil
	case role == RoleRun && docList != nil:
		return FormRunList, nil
	case role == RoleRun && docCol != nil:
		return FormRunLong, nil
	}
	return FormUnknown, missingColumns(rec, FieldDocID+" or "+FieldDocIDs)
}

// normalizeAs converts a record of file, of the given form, into the
// canonical schema of its form, validating every value. Columns that
// already have their canonical type and valid values are taken as they
// are, not copied.
func normalizeAs(file string, form Form, rec arrow.Record, first int64, errs *ErrorList) (out arrow.Record, err error) {
	at := func(i int, field string, err error) {
		errs.Add(&InputError{File: file, Row: first + int64(i), Field: field, Err: err})
	}
	out, held, err := buildCanonical(form, rec, at, errs)
	if out == nil {
		for _, a := range held {
			a.Release()
		}
	}
	return out, err
}

// buildCanonical does the work of normalizeAs. It returns the columns it
// holds references to, for normalizeAs to release when it builds no
// record.
func buildCanonical(form Form, rec arrow.Record, at func(int, string, error), errs *ErrorList) (out arrow.Record, held []arrow.Array, err error) {
	_, qcol := column(rec, queryIDNames...)
	_, docList := column(rec, FieldDocIDs)
	_, docCol := column(rec, FieldDocID)
	n := int(rec.NumRows())
	if form == FormRunLong {
		if runs, ok := validQueryRuns(qcol, n); ok {
			runs.Retain()
			held = append(held, runs)
			return buildRunLong(rec, runs, docCol, n, at, held)
		}
	}
	qids, err := copyStrings(qcol, FieldQueryID, n, at)
	if err != nil {
		return nil, nil, err
	}
	held = append(held, qids)
	switch form {
	case FormGoldLong:
		docs, err := copyStrings(docCol, FieldDocID, n, at)
		if err != nil {
			return nil, held, err
		}
		held = append(held, docs)
		_, gcol := column(rec, gradeNames...)
		if gcol == nil {
			return nil, held, missingColumns(rec, FieldGrade)
		}
		grades, _, err := copyInts(gcol, FieldGrade, false, at)
		if err != nil {
			return nil, held, err
		}
		return NewRecord(GoldLong(), []arrow.Array{qids, docs, Int32Array(grades, nil)}, n), nil, nil
	case FormRunLong:
		return buildRunLong(rec, qids, docCol, n, at, held)
	case FormGoldList:
		offs, docs, err := copyStringList(docList, FieldDocIDs, at)
		if err != nil {
			return nil, held, err
		}
		_, glist := column(rec, FieldGrades)
		var grades []int32
		if glist == nil {
			grades = make([]int32, docs.Len()) // binary relevance: every listed doc has grade 1
			for i := range grades {
				grades[i] = 1
			}
		} else {
			gl, ok := disjointList(glist)
			if !ok {
				return nil, held, fmt.Errorf("column %s: %w: want list<int>, got %s", FieldGrades, ErrTypeMismatch, glist.DataType())
			}
			for i := 0; i < n; i++ {
				s, e := gl.ValueOffsets(i)
				if gl.IsNull(i) || int32(e-s) != offs[i+1]-offs[i] {
					at(i, FieldGrades, fmt.Errorf("%w: %d grades for %d doc_ids", ErrTypeMismatch, e-s, offs[i+1]-offs[i]))
				}
			}
			if errs.Len() > 0 {
				return nil, held, nil
			}
			vals, _, err := copyInts(flatValues(gl), FieldGrades, false, listAt(gl, at))
			if err != nil {
				return nil, held, err
			}
			for i := 0; i < n; i++ {
				s, e := gl.ValueOffsets(i)
				grades = append(grades, vals[s:e]...)
			}
		}
		var query arrow.Array
		if _, qt := column(rec, FieldQuery); qt != nil {
			if query, err = copyNullableStrings(qt, FieldQuery, at); err != nil {
				return nil, held, err
			}
		} else {
			valid := make([]bool, n)
			query = NullableStringArray(make([]int32, n+1), nil, valid)
		}
		tags, err := copyTags(rec, n, at)
		if err != nil {
			return nil, held, err
		}
		if errs.Len() > 0 {
			query.Release()
			tags.Release()
			return nil, held, nil
		}
		return NewRecord(GoldList(), []arrow.Array{qids, query, ListArray(offs, docs, nil), ListArray(offs, Int32Array(grades, nil), nil), tags}, n), nil, nil
	case FormRunList:
		offs, docs, err := copyStringList(docList, FieldDocIDs, at)
		if err != nil {
			return nil, held, err
		}
		scoreOff := make([]int32, 1, n+1)
		var scores []float64
		var valid []bool
		if _, sl := column(rec, FieldScores); sl != nil {
			ll, ok := disjointList(sl)
			if !ok {
				return nil, held, fmt.Errorf("column %s: %w: want list<float>, got %s", FieldScores, ErrTypeMismatch, sl.DataType())
			}
			vals, err := copyScores(flatValues(ll), FieldScores, listAt(ll, at))
			if err != nil {
				return nil, held, err
			}
			valid = make([]bool, n)
			for i := 0; i < n; i++ {
				if !ll.IsNull(i) {
					s, e := ll.ValueOffsets(i)
					if int32(e-s) != offs[i+1]-offs[i] {
						at(i, FieldScores, fmt.Errorf("%w: %d scores for %d doc_ids", ErrTypeMismatch, e-s, offs[i+1]-offs[i]))
						continue
					}
					valid[i] = true
					scores = append(scores, vals[s:e]...)
				}
				scoreOff = append(scoreOff, int32(len(scores)))
			}
		} else {
			valid = make([]bool, n)
			for i := 0; i < n; i++ {
				scoreOff = append(scoreOff, 0)
			}
		}
		if errs.Len() > 0 {
			return nil, held, nil
		}
		return NewRecord(RunList(), []arrow.Array{qids, ListArray(offs, docs, nil), ListArray(scoreOff, Float64Array(scores), valid)}, n), nil, nil
	}
	return nil, held, errors.New("unreachable")
}

// checkLengths checks that the fixed-width buffers (values, offsets,
// indices) of an array, its children and its dictionary are long enough for
// its length. The lengths in a file are arbitrary numbers that Arrow checks
// for some types only (not for lists, for one), and the copies below size
// their output by them: a list claiming 2^31 rows must be an error, not an
// allocation that kills the process.
func checkLengths(d arrow.ArrayData, depth int) error {
	if depth > 64 {
		return errors.New("nested too deeply")
	}
	if d.Len() < 0 || d.Offset() < 0 {
		return fmt.Errorf("negative length %d or offset %d", d.Len(), d.Offset())
	}
	if d.Len() > 0 {
		n := int64(d.Offset()) + int64(d.Len())
		bufs := d.Buffers()
		_, offsets := d.DataType().(arrow.OffsetsDataType)
		if id := d.DataType().ID(); id == arrow.LIST_VIEW || id == arrow.LARGE_LIST_VIEW {
			offsets = false // n offsets and n sizes, no extra offset
		}
		for i, spec := range d.DataType().Layout().Buffers {
			if spec.Kind != arrow.KindFixedWidth {
				continue
			}
			need := n * int64(spec.ByteWidth)
			if i == 1 && offsets {
				need += int64(spec.ByteWidth)
			}
			have := 0
			if i < len(bufs) && bufs[i] != nil {
				have = bufs[i].Len()
			}
			if int64(have) < need {
				return fmt.Errorf("%s buffer %d holds %d bytes, %d values need %d", d.DataType(), i, have, d.Len(), need)
			}
		}
	}
	for _, c := range d.Children() {
		if err := checkLengths(c, depth+1); err != nil {
			return err
		}
	}
	if d.DataType().ID() == arrow.DICTIONARY {
		// (Dictionary returns a typed nil for other types.)
		if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
			return checkLengths(dict, depth+1)
		}
	}
	return nil
}

func missingColumns(rec arrow.Record, want string) error {
	names := make([]string, 0, rec.NumCols())
	for _, f := range rec.Schema().Fields() {
		names = append(names, f.Name)
	}
	return fmt.Errorf("%w: %s (the file has %v)", ErrMissingColumn, want, names)
}

type stringValues interface {
	arrow.Array
	Value(i int) string
}

// stringsOf returns the values of a string column through one interface:
// utf8, large_utf8, utf8_view, binary, binary_view, a dictionary of
// strings, or a run-end encoded column of any of these (whose nulls are
// its values' nulls: read them with rowIsNull, not IsNull).
func stringsOf(a arrow.Array, name string) (func(i int) string, error) {
	switch c := a.(type) {
	case *array.String:
		if err := CheckStringOffsets(c); err != nil {
			return nil, err
		}
		return c.Value, nil
	case *array.LargeString:
		return c.Value, nil
	case *array.StringView: // polars writes its strings as views
		return c.Value, nil
	case *array.Binary:
		return func(i int) string { return string(c.Value(i)) }, nil
	case *array.BinaryView:
		return func(i int) string { return string(c.Value(i)) }, nil
	case *array.Dictionary:
		dict, ok := c.Dictionary().(stringValues)
		if !ok {
			break
		}
		return func(i int) string { return dict.Value(c.GetValueIndex(i)) }, nil
	case *array.RunEndEncoded:
		if _, ok := c.Values().(*array.RunEndEncoded); ok {
			break // nested run-end encoding
		}
		get, err := stringsOf(c.Values(), name)
		if err != nil {
			return nil, err
		}
		if err := checkRunEnds(c); err != nil {
			return nil, fmt.Errorf("column %s: %w", name, err)
		}
		return func(i int) string { return get(c.GetPhysicalIndex(i)) }, nil
	}
	return nil, fmt.Errorf("column %s: %w: want utf8, got %s", name, ErrTypeMismatch, a.DataType())
}

// checkRunEnds checks that the run ends of c can locate each of its rows:
// one a value, without nulls, strictly increasing from above 0, the last
// at or past the end of c's rows.
func checkRunEnds(c *array.RunEndEncoded) error {
	at, err := runEndsOf(c)
	if err != nil {
		return err
	}
	ends := c.RunEndsArr()
	if ends.NullN() != 0 {
		return fmt.Errorf("%d of the run ends are null", ends.NullN())
	}
	if ends.Len() != c.Values().Len() {
		return fmt.Errorf("%d run ends for %d values", ends.Len(), c.Values().Len())
	}
	prev := int64(0)
	for k := range ends.Len() {
		if at(k) <= prev {
			return fmt.Errorf("run end %d at %d is not past %d", k, at(k), prev)
		}
		prev = at(k)
	}
	if c.Len() > 0 && prev < int64(c.Data().Offset()+c.Len()) {
		return fmt.Errorf("runs end at row %d of %d", prev, c.Data().Offset()+c.Len())
	}
	return nil
}

// runEndsOf returns a function giving run end k of c.
func runEndsOf(c *array.RunEndEncoded) (func(k int) int64, error) {
	switch e := c.RunEndsArr().(type) {
	case *array.Int16:
		return func(k int) int64 { return int64(e.Value(k)) }, nil
	case *array.Int32:
		return func(k int) int64 { return int64(e.Value(k)) }, nil
	case *array.Int64:
		return e.Value, nil
	}
	return nil, fmt.Errorf("run ends of type %s", c.RunEndsArr().DataType())
}

func checkID(s string) error {
	if s == "" {
		return ErrEmptyID
	}
	if !utf8.ValidString(s) {
		return ErrInvalidUTF8
	}
	return nil
}

// buildRunLong builds the canonical run-long record of rec from its query
// ids qids (utf8, or of QueryRunsType), which held includes.
func buildRunLong(rec arrow.Record, qids, docCol arrow.Array, n int, at func(int, string, error), held []arrow.Array) (arrow.Record, []arrow.Array, error) {
	docs, err := copyStrings(docCol, FieldDocID, n, at)
	if err != nil {
		return nil, held, err
	}
	held = append(held, docs)
	_, scol := column(rec, FieldScore)
	if scol == nil {
		return nil, held, missingColumns(rec, FieldScore)
	}
	scores, err := scoreColumn(scol, FieldScore, at)
	if err != nil {
		return nil, held, err
	}
	held = append(held, scores)
	ranks, err := rankColumn(rec, n, at)
	if err != nil {
		return nil, held, err
	}
	s := RunLong()
	if qids.DataType().ID() == arrow.RUN_END_ENCODED {
		s = RunLongEncoded()
	}
	return NewRecord(s, []arrow.Array{qids, docs, scores, ranks}, n), nil, nil
}

// validQueryRuns returns a run-long query_id column a of n rows as it is
// when it is of QueryRunsType, with well-formed runs (queryRuns) and
// every id non-null, non-empty and valid UTF-8, checked once a run: the
// join then takes a query's rows a run at a time. ok is false for any
// other column, which copyStrings reads (and reports row by row).
func validQueryRuns(a arrow.Array, n int) (*array.RunEndEncoded, bool) {
	c, ok := a.(*array.RunEndEncoded)
	if !ok || c.Len() != n {
		return nil, false
	}
	_, vals, ok := queryRuns(c)
	if !ok || !idsValid(vals) {
		return nil, false
	}
	return c, true
}

// copyStrings returns the id column a as a utf8 array, reporting nulls,
// empty ids and invalid UTF-8 through at. A utf8 column whose ids are all
// valid is returned as it is (with a reference taken), its bytes checked
// as one buffer; a dictionary column has each dictionary entry checked
// once. Other columns are copied value by value.
func copyStrings(a arrow.Array, name string, n int, at func(int, string, error)) (*array.String, error) {
	switch c := a.(type) {
	case *array.String:
		if c.Len() == n && idsValid(c) {
			c.Retain()
			return c, nil
		}
	case *array.Dictionary:
		if out, ok := copyDictStrings(c, name, n, at); ok {
			return out, nil
		}
	}
	return copyStringsSlow(a, name, n, at)
}

// idsValid reports whether every value of c is a non-null, non-empty,
// valid UTF-8 string. It validates the bytes the values cover as one
// buffer: when that is valid UTF-8 and every value starts on a character
// boundary (not on a continuation byte), every value is valid UTF-8.
func idsValid(c *array.String) bool {
	n := c.Len()
	if n == 0 {
		return true
	}
	bufs := c.Data().Buffers()
	if c.NullN() != 0 || len(bufs) < 3 || bufs[1] == nil || bufs[2] == nil {
		return false
	}
	all := arrow.Int32Traits.CastFromBytes(bufs[1].Bytes())
	start := c.Data().Offset()
	if start < 0 || start+n+1 > len(all) {
		return false
	}
	data := bufs[2].Bytes()
	off := all[start : start+n+1]
	if off[0] < 0 || int(off[n]) > len(data) {
		return false
	}
	// One pass: offsets strictly increasing (no empty value, none
	// decreasing), each value starting on a character boundary.
	prev := off[0]
	for _, e := range off[1:] {
		if e <= prev || data[prev]&0xC0 == 0x80 {
			return false
		}
		prev = e
	}
	return utf8.Valid(data[off[0]:off[n]])
}

// copyDictStrings copies a dictionary<utf8> column with int32 indices (as
// Parquet readers return dictionary-encoded columns) into a utf8 array,
// checking each dictionary entry once rather than every row. ok is false
// for other dictionaries.
func copyDictStrings(c *array.Dictionary, name string, n int, at func(int, string, error)) (out *array.String, ok bool) {
	dict, ok1 := c.Dictionary().(*array.String)
	idx, ok2 := c.Indices().(*array.Int32)
	if !ok1 || !ok2 || c.Len() != n || CheckStringOffsets(dict) != nil {
		return nil, false
	}
	bad := make([]error, dict.Len())
	for j := range bad {
		if dict.IsNull(j) {
			bad[j] = ErrNull
		} else {
			bad[j] = checkID(dict.Value(j))
		}
	}
	ids := idx.Int32Values()
	if len(ids) != n {
		return nil, false
	}
	size := 0
	for _, j := range ids {
		if j < 0 || int(j) >= len(bad) {
			return nil, false // the slow path reports it
		}
		size += dict.ValueLen(int(j))
	}
	b := NewStrings(n, size)
	nulls := c.NullN() != 0
	for i, j := range ids {
		if nulls && c.IsNull(i) {
			at(i, name, ErrNull)
			b.Append("")
			continue
		}
		if bad[j] != nil {
			at(i, name, bad[j])
		}
		b.Append(dict.Value(int(j)))
	}
	return b.Array(), true
}

// scoreColumn returns the score column a as float64 values, reporting
// nulls and values that are not finite through at. A float64 column
// without either is returned as it is (with a reference taken).
func scoreColumn(a arrow.Array, name string, at func(int, string, error)) (arrow.Array, error) {
	if c, ok := a.(*array.Float64); ok && c.NullN() == 0 && allFinite(c.Float64Values()) {
		c.Retain()
		return c, nil
	}
	scores, err := copyScores(a, name, at)
	if err != nil {
		return nil, err
	}
	return Float64Array(scores), nil
}

// allFinite reports whether no value of v is NaN or infinite.
func allFinite(v []float64) bool {
	// A float64 is NaN or infinite when its exponent bits are all ones.
	// The test is gathered without a branch a value, a block at a time.
	const exp = 0x7FF0000000000000
	const block = 256
	for len(v) > 0 {
		k := min(block, len(v))
		var bad uint64
		for _, x := range v[:k] {
			bad |= ((math.Float64bits(x) & exp) ^ exp) - 1 // top bit set when all ones
		}
		if bad>>63 != 0 {
			return false
		}
		v = v[k:]
	}
	return true
}

// rankColumn returns the nullable rank column of a run in the long form:
// the file's rank column (taken as it is when it is int32), or all null.
func rankColumn(rec arrow.Record, n int, at func(int, string, error)) (arrow.Array, error) {
	_, rcol := column(rec, FieldRank)
	if rcol == nil {
		return NullInt32Array(n), nil
	}
	if c, ok := rcol.(*array.Int32); ok && c.Len() == n {
		c.Retain()
		return c, nil
	}
	ranks, valid, err := copyInts(rcol, FieldRank, true, at)
	if err != nil {
		return nil, err
	}
	return Int32Array(ranks, valid), nil
}

// maxReserve bounds the bytes of strings reserved before a column is
// copied value by value: its rows may be run-end encoded values that
// expand to less than a guess a row (past it, the copy grows as it goes).
const maxReserve = 64 << 20

func copyStringsSlow(a arrow.Array, name string, n int, at func(int, string, error)) (*array.String, error) {
	get, err := stringsOf(a, name)
	if err != nil {
		return nil, err
	}
	b := NewStrings(n, min(16*n, maxReserve))
	for i := 0; i < n; i++ {
		if rowIsNull(a, i) {
			at(i, name, ErrNull)
			b.Append("")
			continue
		}
		s := get(i)
		if err := checkID(s); err != nil {
			at(i, name, err)
		}
		b.Append(s)
	}
	return b.Array(), nil
}

// rowIsNull reports whether row i of a is null: for a run-end encoded
// array, whether its run's value is.
func rowIsNull(a arrow.Array, i int) bool {
	if c, ok := a.(*array.RunEndEncoded); ok {
		return c.Values().IsNull(c.GetPhysicalIndex(i))
	}
	return a.IsNull(i)
}

func copyNullableStrings(a arrow.Array, name string, at func(int, string, error)) (*array.String, error) {
	get, err := stringsOf(a, name)
	if err != nil {
		return nil, err
	}
	n := a.Len()
	b := NewStrings(n, min(32*n, maxReserve))
	valid := make([]bool, n)
	for i := 0; i < n; i++ {
		if rowIsNull(a, i) {
			b.Append("")
			continue
		}
		s := get(i)
		if !utf8.ValidString(s) {
			at(i, name, ErrInvalidUTF8)
		}
		valid[i] = true
		b.Append(s)
	}
	return NullableStringArray(b.Offsets, b.Data, valid), nil
}

// disjointList returns a as a list whose rows hold disjoint ranges of its
// values (list, large_list, fixed_size_list); ok is false for other
// arrays, list views included, whose rows may each hold all the values:
// copied a row at a time, a few bytes of a file would expand without
// bound.
func disjointList(a arrow.Array) (array.ListLike, bool) {
	switch c := a.(type) {
	case *array.List:
		return c, true
	case *array.LargeList:
		return c, true
	case *array.FixedSizeList:
		return c, true
	}
	return nil, false
}

// flatValues returns the child values of a list, sliced to the list's own
// extent.
func flatValues(l array.ListLike) arrow.Array { return l.ListValues() }

// listAt turns at, which locates errors by row, into a function that
// locates errors by index into the child values of l: an error at value j
// is reported at the row whose list holds j. Values that no (valid) row
// holds are not used, and their errors are dropped.
func listAt(l array.ListLike, at func(int, string, error)) func(int, string, error) {
	n := l.Len()
	return func(j int, field string, err error) {
		i := sort.Search(n, func(i int) bool { _, e := l.ValueOffsets(i); return e > int64(j) })
		if i == n || l.IsNull(i) {
			return
		}
		if s, _ := l.ValueOffsets(i); int64(j) < s {
			return
		}
		at(i, field, err)
	}
}

func copyStringList(a arrow.Array, name string, at func(int, string, error)) ([]int32, *array.String, error) {
	l, ok := disjointList(a)
	if !ok {
		return nil, nil, fmt.Errorf("column %s: %w: want list<utf8>, got %s", name, ErrTypeMismatch, a.DataType())
	}
	vals := flatValues(l)
	get, err := stringsOf(vals, name)
	if err != nil {
		return nil, nil, err
	}
	n := l.Len()
	offs := make([]int32, 1, n+1)
	b := NewStrings(min(n*8, vals.Len()), min(n*64, 1<<20))
	for i := 0; i < n; i++ {
		if l.IsNull(i) {
			at(i, name, ErrNull)
		} else {
			s, e := l.ValueOffsets(i)
			if s < 0 || e < s || e > int64(vals.Len()) {
				return nil, nil, fmt.Errorf("column %s: list offsets out of range", name)
			}
			for j := s; j < e; j++ {
				if rowIsNull(vals, int(j)) {
					at(i, name, ErrNull)
					continue
				}
				v := get(int(j))
				if err := checkID(v); err != nil {
					at(i, name, err)
				}
				b.Append(v)
			}
		}
		offs = append(offs, int32(b.Len()))
	}
	return offs, b.Array(), nil
}

// copyInts copies an integer column into int32 values. With nullable, nulls
// become invalid entries; otherwise they are errors.
func copyInts(a arrow.Array, name string, nullable bool, at func(int, string, error)) ([]int32, []bool, error) {
	var get func(i int) (int64, bool)
	switch c := a.(type) {
	case *array.Int8:
		get = func(i int) (int64, bool) { return int64(c.Value(i)), true }
	case *array.Int16:
		get = func(i int) (int64, bool) { return int64(c.Value(i)), true }
	case *array.Int32:
		get = func(i int) (int64, bool) { return int64(c.Value(i)), true }
	case *array.Int64:
		get = func(i int) (int64, bool) { return c.Value(i), true }
	case *array.Uint8:
		get = func(i int) (int64, bool) { return int64(c.Value(i)), true }
	case *array.Uint16:
		get = func(i int) (int64, bool) { return int64(c.Value(i)), true }
	case *array.Uint32:
		get = func(i int) (int64, bool) { return int64(c.Value(i)), true }
	case *array.Uint64:
		get = func(i int) (int64, bool) { v := c.Value(i); return int64(v), v <= math.MaxInt64 }
	case *array.Float64:
		get = func(i int) (int64, bool) { v := c.Value(i); return int64(v), v == math.Trunc(v) }
	case *array.Float32:
		get = func(i int) (int64, bool) { v := float64(c.Value(i)); return int64(v), v == math.Trunc(v) }
	default:
		return nil, nil, fmt.Errorf("column %s: %w: want an integer type, got %s", name, ErrTypeMismatch, a.DataType())
	}
	n := a.Len()
	out := make([]int32, n)
	var valid []bool
	if nullable {
		valid = make([]bool, n)
	}
	for i := 0; i < n; i++ {
		if a.IsNull(i) {
			if !nullable {
				at(i, name, ErrNull)
			}
			continue
		}
		v, ok := get(i)
		if !ok || v < math.MinInt32 || v > math.MaxInt32 {
			at(i, name, fmt.Errorf("%w: not an int32", ErrNumber))
			continue
		}
		out[i] = int32(v)
		if nullable {
			valid[i] = true
		}
	}
	return out, valid, nil
}

func copyScores(a arrow.Array, name string, at func(int, string, error)) ([]float64, error) {
	var get func(i int) float64
	switch c := a.(type) {
	case *array.Float64:
		get = c.Value
	case *array.Float32:
		get = func(i int) float64 { return float64(c.Value(i)) }
	case *array.Int64:
		get = func(i int) float64 { return float64(c.Value(i)) }
	case *array.Int32:
		get = func(i int) float64 { return float64(c.Value(i)) }
	default:
		return nil, fmt.Errorf("column %s: %w: want a float type, got %s", name, ErrTypeMismatch, a.DataType())
	}
	n := a.Len()
	out := make([]float64, n)
	for i := 0; i < n; i++ {
		if a.IsNull(i) {
			at(i, name, ErrNull)
			continue
		}
		v := get(i)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			at(i, name, fmt.Errorf("%w: %v", ErrNotFinite, v))
			continue
		}
		out[i] = v
	}
	return out, nil
}

func copyTags(rec arrow.Record, n int, at func(int, string, error)) (*array.Map, error) {
	offs := make([]int32, 1, n+1)
	keys := NewStrings(n, min(16*n, maxReserve))
	vals := NewStrings(n, min(16*n, maxReserve))
	_, col := column(rec, FieldTags)
	if col == nil {
		for i := 0; i < n; i++ {
			offs = append(offs, 0)
		}
		return MapArray(offs, keys.Array(), vals.Array(), nil), nil
	}
	m, ok := col.(*array.Map)
	if !ok {
		return nil, fmt.Errorf("column %s: %w: want map<utf8,utf8>, got %s", FieldTags, ErrTypeMismatch, col.DataType())
	}
	getK, err := stringsOf(m.Keys(), FieldTags)
	if err != nil {
		return nil, err
	}
	getV, err := stringsOf(m.Items(), FieldTags)
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		if !m.IsNull(i) {
			s, e := m.ValueOffsets(i)
			for j := int(s); j < int(e); j++ {
				if rowIsNull(m.Keys(), j) || rowIsNull(m.Items(), j) {
					continue
				}
				k, v := getK(j), getV(j)
				if k == "" || !utf8.ValidString(k) || !utf8.ValidString(v) || containsByte(k, '=') {
					at(i, FieldTags, fmt.Errorf("%w: tag %q: name must be non-empty UTF-8 without '='", ErrTypeMismatch, k))
					continue
				}
				keys.Append(k)
				vals.Append(v)
			}
		}
		offs = append(offs, int32(keys.Len()))
	}
	return MapArray(offs, keys.Array(), vals.Array(), nil), nil
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}

// ipcFileSource reads an Arrow IPC file, memory-mapped when the platform
// allows. An uncompressed batch of plain types is a view (viewRecord): of
// the mapping in a large file, of one read of the batch in a small one;
// others are copied from the mapping by the Arrow reader. Its record
// batches are its units.
type ipcFileSource struct {
	f  *os.File
	mm mapping
	r  *ipc.FileReader
	i  int
	// mapped, when the file is mapped and has no dictionaries, decodes
	// batches from views of the mapping.
	mapped *mappedBatches
	mem    memory.Allocator
}

func newIPCFileSource(f *os.File, size int64, opts Options) (recordSource, error) {
	var ra ipc.ReadAtSeeker = f
	mm, err := mapFile(f, size)
	if err == nil && mm != nil {
		ra = mappedReader{bytes.NewReader(mm), mm}
	}
	r, err := ipc.NewFileReader(ra, ipc.WithAllocator(opts.Allocator))
	if err != nil {
		mm.unmap()
		return nil, err
	}
	mapped := newMappedBatches(mm, f, r.Schema())
	// Reading the footer and the batches' metadata mapped pages (a fault
	// maps a whole folio of the page cache, more than the bytes read):
	// drop them, each batch's pages are mapped when it is decoded.
	mm.drop(mm)
	return &ipcFileSource{f: f, mm: mm, r: r, mapped: mapped, mem: opts.Allocator}, nil
}

// mappedReader reads a mapped file, through the mapping's ReadAt.
type mappedReader struct {
	*bytes.Reader
	m mapping
}

func (r mappedReader) ReadAt(p []byte, off int64) (int, error) { return r.m.ReadAt(p, off) }

func (s *ipcFileSource) schema() *arrow.Schema { return s.r.Schema() }

func (s *ipcFileSource) numUnits() int { return s.r.NumRecords() }

func (s *ipcFileSource) readUnit(_ context.Context, i int) ([]arrow.Record, error) {
	if s.mapped != nil && len(s.mapped.blocks) == s.r.NumRecords() {
		rec, err := s.mapped.record(i, s.mem)
		if err != nil {
			return nil, err
		}
		return []arrow.Record{rec}, nil
	}
	rec, err := s.r.RecordAt(i)
	if err != nil {
		return nil, err
	}
	return []arrow.Record{rec}, nil
}

func (s *ipcFileSource) next() (arrow.Record, error) {
	if s.i >= s.r.NumRecords() {
		return nil, io.EOF
	}
	rec, err := s.r.Record(s.i)
	s.i++
	return rec, err
}

func (s *ipcFileSource) close() error {
	s.r.Close()
	// A mapping records were views of stays (viewMappedMinSize); other
	// records hold copies of the buffers.
	var err error
	if s.mapped == nil || !s.mapped.viewed.Load() {
		err = s.mm.unmap()
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ipcStreamSource reads an Arrow IPC stream.
type ipcStreamSource struct {
	f *os.File
	r *ipc.Reader
}

func newIPCStreamSource(f *os.File, opts Options) (recordSource, error) {
	r, err := ipc.NewReader(f, ipc.WithAllocator(opts.Allocator))
	if err != nil {
		return nil, err
	}
	return &ipcStreamSource{f: f, r: r}, nil
}

func (s *ipcStreamSource) schema() *arrow.Schema { return s.r.Schema() }

func (s *ipcStreamSource) next() (arrow.Record, error) {
	if s.r.Next() {
		return s.r.Record(), nil
	}
	if err := s.r.Err(); err != nil {
		return nil, err
	}
	return nil, io.EOF
}

func (s *ipcStreamSource) close() error {
	s.r.Release()
	return s.f.Close()
}

// parquetSource reads a Parquet file: its row groups are its units, read
// by a flatPlan when the file has flat columns only, else through pqarrow
// with the query_id column read as a dictionary (see copyDictStrings).
type parquetSource struct {
	f  *os.File
	pf *file.Reader
	fr *pqarrow.FileReader
	rr pqarrow.RecordReader // for next, opened at its first call
	sc *arrow.Schema
	// flat, when the file has only flat columns, reads row groups without
	// pqarrow.
	flat *flatPlan
	mm   mapping // the file's mapping flat views column chunks in (nil: none)
}

func newParquetSource(f *os.File, role Role, opts Options) (recordSource, error) {
	// Stream column chunks through a buffer rather than reading each one
	// whole into a new allocation.
	props := parquet.NewReaderProperties(opts.Allocator)
	props.BufferedStreamEnabled = true
	props.BufferSize = 1 << 20
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := info.Size()
	pf, err := file.NewParquetReader(f, file.WithReadProps(props))
	if err != nil {
		return nil, err
	}
	if err := checkParquetArrowSchema(pf); err != nil {
		pf.Close()
		return nil, err
	}
	// A flat file's row groups are read by the flat plan, never by
	// pqarrow's goroutines (next opens its column chunks first): opening
	// them all here would only allocate a stream buffer for each.
	var mem *recycler
	if opts.ReuseMemory {
		mem = &batchMemory
	}
	flat := newFlatPlan(pf, f, size, allocationLimitOf(opts.Allocator), mem, opts.SkipRanks, role)
	var mm mapping
	if flat != nil && flat.chunks && size >= mappedChunksMinSize {
		// Column chunks are views of the mapping: no read copies them.
		// Values are copied out before a chunk is released, so the
		// mapping goes with the reader (see close).
		if m, err := mapFile(f, size); err == nil {
			mm, flat.mm = m, m
		}
	}
	if flat == nil {
		if err := decodeNestedColumns(pf); err != nil {
			pf.Close()
			return nil, err
		}
	}
	arrowProps := pqarrow.ArrowReadProperties{BatchSize: 128 << 10}
	if c := dictionaryColumn(pf); c >= 0 {
		arrowProps.SetReadDict(c, true)
	}
	fr, err := pqarrow.NewFileReader(pf, arrowProps, opts.Allocator)
	if err != nil {
		pf.Close()
		return nil, err
	}
	// The file's schema with its metadata (the record reader's has none).
	sc, err := fr.Schema()
	if err != nil {
		pf.Close()
		return nil, err
	}
	return &parquetSource{f: f, pf: pf, fr: fr, sc: sc, flat: flat, mm: mm}, nil
}

// mappedChunksMinSize is the smallest Parquet file whose column chunks are
// read from a memory mapping rather than copied into memory: the
// mapping's page faults cost less than the copies on large files, more on
// small ones. A variable for tests.
var mappedChunksMinSize int64 = 64 << 20

// allocationLimitOf returns the limit of a LimitedAllocator, or the
// ceiling of AllocationLimit.
func allocationLimitOf(a memory.Allocator) int {
	if l, ok := a.(LimitedAllocator); ok {
		return l.Limit
	}
	return AllocationLimit(math.MaxInt64 / 256)
}

// dictionaryColumn returns the leaf index of a top-level string query_id
// column, or -1.
func dictionaryColumn(pf *file.Reader) int {
	sc := pf.MetaData().Schema
	for _, name := range []string{FieldQueryID, "qid"} {
		c := sc.ColumnIndexByName(name)
		if c < 0 {
			continue
		}
		if col := sc.Column(c); col.PhysicalType() == parquet.Types.ByteArray && col.MaxRepetitionLevel() == 0 {
			return c
		}
		return -1
	}
	return -1
}

func (s *parquetSource) numUnits() int { return s.pf.NumRowGroups() }

func (s *parquetSource) readUnit(ctx context.Context, g int) ([]arrow.Record, error) {
	if s.flat != nil {
		return s.flat.readRowGroup(g)
	}
	rr, err := s.fr.GetRecordReader(ctx, nil, []int{g})
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	var recs []arrow.Record
	for rr.Next() {
		rec := rr.Record()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		return recs, err
	}
	return recs, nil
}

// checkParquetArrowSchema checks the framing of the Arrow schema that
// writers store in a Parquet file's metadata (key ARROW:schema, a base64
// IPC stream), decoded as pqarrow decodes it. pqarrow reads it with the
// default allocator and trusts its lengths: a corrupt one can ask for
// gigabytes.
func checkParquetArrowSchema(pf *file.Reader) error {
	kv := pf.MetaData().KeyValueMetadata()
	if kv == nil {
		return nil
	}
	v := kv.FindValue("ARROW:schema")
	if v == nil {
		return nil
	}
	var decoded []byte
	var err error
	if len(*v)%4 == 0 {
		decoded, err = base64.StdEncoding.DecodeString(*v)
	}
	if len(decoded) == 0 || err != nil {
		decoded, err = base64.RawStdEncoding.DecodeString(*v)
	}
	if err != nil {
		return nil // pqarrow fails on it too, without allocating
	}
	if err := CheckIPCStream(bytes.NewReader(decoded), int64(len(decoded))); err != nil {
		return fmt.Errorf("stored Arrow schema: %w", err)
	}
	return nil
}

// decodeNestedColumns opens, in the calling goroutine, the reader of every
// column chunk of pf, and decodes every leaf column that lies in a struct or
// a map (such as tags). pqarrow does both in goroutines of its own
// (FileReader.GetFieldReaders, structReader.LoadBatch), where a panic on
// corrupt metadata or data cannot be recovered and ends the process; doing
// it here first, under protect, turns such a panic into an error.
func decodeNestedColumns(pf *file.Reader) error {
	sc := pf.MetaData().Schema
	as, err := pqarrow.FromParquet(sc, nil, pf.MetaData().KeyValueMetadata())
	if err != nil {
		return err
	}
	root := sc.Root()
	nested := make(map[int]bool) // root field index → holds a struct
	for i := 0; i < root.NumFields() && i < as.NumFields(); i++ {
		nested[i] = hasStruct(as.Field(i).Type)
	}
	for c := 0; c < sc.NumColumns(); c++ {
		top := -1
		for i := 0; i < root.NumFields(); i++ {
			if root.Field(i) == sc.ColumnRoot(c) {
				top = i
			}
		}
		for g := 0; g < pf.NumRowGroups(); g++ {
			cr, err := pf.RowGroup(g).Column(c)
			if err != nil {
				return err
			}
			if top < 0 || !nested[top] {
				continue
			}
			if err := decodeColumnChunk(cr); err != nil {
				return fmt.Errorf("column %s: %w", sc.Column(c).Path(), err)
			}
		}
	}
	return nil
}

func hasStruct(t arrow.DataType) bool {
	switch t := t.(type) {
	case *arrow.StructType:
		return true
	case arrow.ListLikeType:
		return hasStruct(t.Elem())
	case *arrow.DictionaryType:
		return hasStruct(t.ValueType)
	}
	return false
}

// decodeColumnChunk reads every value of a column chunk and drops them.
func decodeColumnChunk(cr file.ColumnChunkReader) error {
	const batch = 1024
	def, rep := make([]int16, batch), make([]int16, batch)
	for cr.HasNext() {
		var n int64
		var err error
		switch r := cr.(type) {
		case *file.BooleanColumnChunkReader:
			n, _, err = r.ReadBatch(batch, make([]bool, batch), def, rep)
		case *file.Int32ColumnChunkReader:
			n, _, err = r.ReadBatch(batch, make([]int32, batch), def, rep)
		case *file.Int64ColumnChunkReader:
			n, _, err = r.ReadBatch(batch, make([]int64, batch), def, rep)
		case *file.Int96ColumnChunkReader:
			n, _, err = r.ReadBatch(batch, make([]parquet.Int96, batch), def, rep)
		case *file.Float32ColumnChunkReader:
			n, _, err = r.ReadBatch(batch, make([]float32, batch), def, rep)
		case *file.Float64ColumnChunkReader:
			n, _, err = r.ReadBatch(batch, make([]float64, batch), def, rep)
		case *file.ByteArrayColumnChunkReader:
			n, _, err = r.ReadBatch(batch, make([]parquet.ByteArray, batch), def, rep)
		case *file.FixedLenByteArrayColumnChunkReader:
			n, _, err = r.ReadBatch(batch, make([]parquet.FixedLenByteArray, batch), def, rep)
		default:
			return nil
		}
		if err != nil {
			return err
		}
		if n == 0 {
			break
		}
	}
	return cr.Err()
}

func (s *parquetSource) schema() *arrow.Schema { return s.sc }

func (s *parquetSource) next() (arrow.Record, error) {
	if s.rr == nil {
		if s.flat != nil {
			if err := decodeNestedColumns(s.pf); err != nil {
				return nil, err
			}
		}
		rr, err := s.fr.GetRecordReader(context.Background(), nil, nil)
		if err != nil {
			return nil, err
		}
		s.rr = rr
	}
	if s.rr.Next() {
		return s.rr.Record(), nil
	}
	if err := s.rr.Err(); err != nil && err != io.EOF {
		return nil, err
	}
	return nil, io.EOF
}

// close closes the file and unmaps it: the reader's pipeline, the only
// user of the mapping, has stopped (columnarReader.Close), and records
// hold copies of its values.
func (s *parquetSource) close() error {
	if s.rr != nil {
		s.rr.Release()
	}
	err := s.pf.Close() // closes s.f
	if uerr := s.mm.unmap(); err == nil {
		err = uerr
	}
	s.mm = nil
	return err
}
