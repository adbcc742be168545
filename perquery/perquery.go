package perquery

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v16/arrow"

	"github.com/evalgate/evalgate/internal/atomicfile"
	"github.com/evalgate/evalgate/metric"
	"github.com/evalgate/evalgate/schema"
)

// Format is a per-query output format.
type Format string

// The formats.
const (
	JSONL       Format = "jsonl"
	TSV         Format = "tsv"
	TREC        Format = "trec"
	Arrow       Format = "arrow"
	ArrowStream Format = "arrow-stream"
	Parquet     Format = "parquet"
)

// FormatOf picks the format from a file extension: .jsonl (or .ndjson),
// .tsv, .trec (or .eval), .arrow (or .feather, .ipc), .arrows, .parquet
// (or .pq). Any other extension is an error, .txt and .json included: a
// reader would not know what the file holds (TSV or trec_eval lines; JSON
// Lines is not a JSON document).
func FormatOf(path string) (Format, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".ndjson":
		return JSONL, nil
	case ".tsv":
		return TSV, nil
	case ".trec", ".eval":
		return TREC, nil
	case ".arrow", ".feather", ".ipc":
		return Arrow, nil
	case ".arrows":
		return ArrowStream, nil
	case ".parquet", ".pq":
		return Parquet, nil
	}
	return "", fmt.Errorf("per-query output %s: unknown extension (want .jsonl, .tsv, .trec, .arrow, .arrows or .parquet)", path)
}

// Writer writes per-query rows.
type Writer interface {
	// Write adds one query's values, in the measure order given at creation.
	Write(queryID string, vals []float64) error
	// Commit finishes the output (for files: moves it into place).
	Commit() error
	// Abort discards the output. It is safe after Commit.
	Abort()
}

// Create opens an atomic per-query file at path in the format of its
// extension.
func Create(path string, measures []metric.Measure) (Writer, error) {
	f, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	af, err := atomicfile.Create(path)
	if err != nil {
		return nil, err
	}
	w, err := New(af, f, measures)
	if err != nil {
		af.Abort()
		return nil, err
	}
	return &fileWriter{Writer: w, f: af}, nil
}

type fileWriter struct {
	Writer
	f *atomicfile.File
}

func (w *fileWriter) Commit() error {
	if err := w.Writer.Commit(); err != nil {
		w.f.Abort()
		return err
	}
	return w.f.Commit()
}

func (w *fileWriter) Abort() {
	w.Writer.Abort()
	w.f.Abort()
}

// New returns a Writer of the format onto w. Commit flushes the format's
// trailer but does not close w.
func New(w io.Writer, f Format, measures []metric.Measure) (Writer, error) {
	switch f {
	case JSONL:
		return &jsonlWriter{w: w, names: metric.Names(measures)}, nil
	case TSV:
		tw := &tsvWriter{w: w}
		tw.buf = append(tw.buf, schema.FieldQueryID...)
		for _, n := range metric.Names(measures) {
			tw.buf = append(tw.buf, '\t')
			tw.buf = append(tw.buf, n...)
		}
		tw.buf = append(tw.buf, '\n')
		return tw, nil
	case TREC:
		return &trecWriter{w: w, measures: measures}, nil
	case Arrow, ArrowStream, Parquet:
		return newArrowWriter(w, f, measures)
	}
	return nil, fmt.Errorf("per-query output: unknown format %q", f)
}

type jsonlWriter struct {
	w     io.Writer
	names []string
	buf   []byte
}

func (j *jsonlWriter) Write(qid string, vals []float64) error {
	b := j.buf[:0]
	b = append(b, `{"query_id":`...)
	q, _ := json.Marshal(qid)
	b = append(b, q...)
	for i, v := range vals {
		b = append(b, ',')
		n, _ := json.Marshal(j.names[i])
		b = append(b, n...)
		b = append(b, ':')
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	b = append(b, '}', '\n')
	j.buf = b
	_, err := j.w.Write(b)
	return err
}

func (j *jsonlWriter) Commit() error { return nil }
func (j *jsonlWriter) Abort()        {}

type tsvWriter struct {
	w   io.Writer
	buf []byte
}

func (t *tsvWriter) Write(qid string, vals []float64) error {
	b := append(t.buf, qid...)
	for _, v := range vals {
		b = append(b, '\t')
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
	}
	b = append(b, '\n')
	_, err := t.w.Write(b)
	t.buf = b[:0]
	return err
}

func (t *tsvWriter) Commit() error {
	if len(t.buf) > 0 { // header only: no rows were written
		_, err := t.w.Write(t.buf)
		t.buf = t.buf[:0]
		return err
	}
	return nil
}
func (t *tsvWriter) Abort() {}

// trecWriter writes "measure\tqid\tvalue" lines, grouped by query as
// trec_eval -q does.
type trecWriter struct {
	w        io.Writer
	measures []metric.Measure
	buf      []byte
}

// FormatTRECValue formats a value as trec_eval prints it: integers for the
// counts, four decimals otherwise.
func FormatTRECValue(m metric.Measure, v float64) string {
	if m.Summed() && v == math.Trunc(v) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 4, 64)
}

func (t *trecWriter) Write(qid string, vals []float64) error {
	b := t.buf[:0]
	for i, m := range t.measures {
		b = fmt.Appendf(b, "%-22s\t%s\t%s\n", m.TRECName(), qid, FormatTRECValue(m, vals[i]))
	}
	t.buf = b
	_, err := t.w.Write(b)
	return err
}

func (t *trecWriter) Commit() error { return nil }
func (t *trecWriter) Abort()        {}

// arrowWriter buffers rows and writes them as record batches.
type arrowWriter struct {
	schema *arrow.Schema
	ids    schema.Strings
	cols   [][]float64
	flush  func(arrow.Record) error
	close  func() error
	closed bool // close was called
}

const arrowBatchRows = 64 << 10

func newArrowWriter(w io.Writer, f Format, measures []metric.Measure) (*arrowWriter, error) {
	s := schema.PerQuery(metric.Names(measures))
	a := &arrowWriter{schema: s, ids: schema.NewStrings(1024, 16<<10), cols: make([][]float64, len(measures))}
	sf := map[Format]schema.Format{Arrow: schema.FormatArrow, ArrowStream: schema.FormatArrowStream, Parquet: schema.FormatParquet}[f]
	rw, err := schema.NewRecordWriter(w, sf, s)
	if err != nil {
		return nil, err
	}
	a.flush, a.close = rw.Write, rw.Close
	return a, nil
}

func (a *arrowWriter) Write(qid string, vals []float64) error {
	a.ids.Append(qid)
	for i, v := range vals {
		a.cols[i] = append(a.cols[i], v)
	}
	if a.ids.Len() >= arrowBatchRows {
		return a.writeBatch()
	}
	return nil
}

func (a *arrowWriter) writeBatch() error {
	n := a.ids.Len()
	if n == 0 {
		return nil
	}
	cols := []arrow.Array{a.ids.Array()}
	for _, c := range a.cols {
		cols = append(cols, schema.Float64Array(c))
	}
	rec := schema.NewRecord(a.schema, cols, n)
	err := a.flush(rec)
	rec.Release()
	a.ids = schema.NewStrings(1024, 16<<10)
	for i := range a.cols {
		a.cols[i] = nil
	}
	if err != nil {
		return fmt.Errorf("write per-query batch: %w", err)
	}
	return nil
}

func (a *arrowWriter) Commit() error {
	if err := a.writeBatch(); err != nil {
		return err
	}
	a.closed = true
	if err := a.close(); err != nil {
		return fmt.Errorf("finish per-query output: %w", err)
	}
	return nil
}

// Abort stops the record writer (its goroutine), unless Commit did.
func (a *arrowWriter) Abort() {
	if !a.closed {
		a.closed = true
		a.close()
	}
}

// Tee writes to several writers.
type Tee []Writer

// Write writes to every writer.
func (t Tee) Write(qid string, vals []float64) error {
	for _, w := range t {
		if err := w.Write(qid, vals); err != nil {
			return err
		}
	}
	return nil
}

// Commit commits every writer, stopping at the first error.
func (t Tee) Commit() error {
	for _, w := range t {
		if err := w.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// Abort aborts every writer.
func (t Tee) Abort() {
	for _, w := range t {
		w.Abort()
	}
}
