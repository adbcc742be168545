package schema

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"sync/atomic"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/apache/arrow/go/v16/arrow/ipc"
	"github.com/apache/arrow/go/v16/parquet"
	"github.com/apache/arrow/go/v16/parquet/compress"
	"github.com/apache/arrow/go/v16/parquet/pqarrow"

	"github.com/evalgate/evalgate/internal/atomicfile"
)

// RecordWriter writes record batches of one schema to a file format.
type RecordWriter interface {
	Write(rec arrow.Record) error
	// Close writes the trailer (it does not close the underlying writer).
	Close() error
}

// WriterOptions tunes NewRecordWriterWith. The zero value gives the
// defaults of NewRecordWriter.
type WriterOptions struct {
	// Compression is the Parquet codec: "none" (the default), "snappy" or
	// "zstd". Reading is what a converted file is for, and an
	// uncompressed file reads fastest: on 200k queries x 100, scoring
	// took 1.50-1.66 s of CPU uncompressed, 1.79-1.95 s with snappy and
	// 1.86-1.99 s with zstd, for files of 441, 256 and 162 MB (the text
	// is 778 MB; snappy's is 270 MB since evalgate writes flat files
	// itself, with s2's encoder); writing is fastest uncompressed too
	// (zstd takes 2 to 2.5 times the CPU time). snappy or zstd are for
	// files that travel or live on slow disks (docs/architecture.md,
	// "Columnar input"). Arrow IPC files are written uncompressed, to be
	// read without decoding.
	Compression string
	// RowGroupRows is the number of rows after which a Parquet row group
	// ends, at the next query boundary (default DefaultRowGroupRows).
	RowGroupRows int
	// PlainQueryIDs makes Convert write a long-form run's query_id into
	// Arrow IPC as utf8, the id on every row, rather than run-end encoded
	// (QueryRunsType), for tools that do not read run-end encoded columns.
	PlainQueryIDs bool
}

// DefaultRowGroupRows is the default Parquet row group size: small
// enough for a reader to decode several row groups in parallel in bounded
// memory (a group of 64 Ki rows is about 2.5 MB decoded; with 128 Ki and
// 256 Ki rows the peak RSS of scoring 1M queries x 100 was above text's),
// large enough for the per-group overhead not to show (the same time as
// 128 Ki rows on 200k queries).
const DefaultRowGroupRows = 64 << 10

// ParquetCodec parses a --compression value.
func ParquetCodec(name string) (compress.Compression, error) {
	switch strings.ToLower(name) {
	case "", "none", "uncompressed":
		return compress.Codecs.Uncompressed, nil
	case "snappy":
		return compress.Codecs.Snappy, nil
	case "zstd":
		return compress.Codecs.Zstd, nil
	}
	return 0, fmt.Errorf("unknown compression %q (want none, snappy or zstd)", name)
}

// NewRecordWriter returns a writer of Arrow IPC file, Arrow IPC stream or
// Parquet onto w, with the default WriterOptions. The IPC file format
// needs to know its position in w; a plain io.Writer is fine as long as
// writing starts at offset 0.
func NewRecordWriter(w io.Writer, format Format, s *arrow.Schema) (RecordWriter, error) {
	return NewRecordWriterWith(w, format, s, WriterOptions{})
}

// NewRecordWriterWith is NewRecordWriter with options. Parquet files get
// a dictionary-encoded query_id (a few thousand distinct values a row
// group), plain doc ids (nearly all distinct within a query: a dictionary
// would be as large as the column), a dictionary-encoded rank in the long
// forms (see flatColumn), and row groups that end at query boundaries, so
// that a query's rows never span two of them.
func NewRecordWriterWith(w io.Writer, format Format, s *arrow.Schema, o WriterOptions) (RecordWriter, error) {
	switch format {
	case FormatArrow:
		aw := newAsyncWriter(w)
		fw, err := ipc.NewFileWriter(&positionWriter{w: aw}, ipc.WithSchema(s))
		if err != nil {
			aw.Close()
			return nil, fmt.Errorf("create arrow file writer: %w", err)
		}
		return &ipcWriter{RecordWriter: fw, out: aw}, nil
	case FormatArrowStream:
		aw := newAsyncWriter(w)
		return &ipcWriter{RecordWriter: ipc.NewWriter(aw, ipc.WithSchema(s)), out: aw}, nil
	case FormatParquet:
		codec, err := ParquetCodec(o.Compression)
		if err != nil {
			return nil, fmt.Errorf("create parquet writer: %w", err)
		}
		rows := o.RowGroupRows
		if rows <= 0 {
			rows = DefaultRowGroupRows
		}
		aw := newAsyncWriter(w)
		dictQID := s.NumFields() > 0 && s.Field(0).Name == FieldQueryID && s.Field(0).Type.ID() == arrow.STRING
		pqw := &parquetWriter{out: aw, schema: s, target: rows, dictQID: dictQID}
		if isFlatSchema(s) {
			pqw.flat, err = newFlatFileWriter(aw, s, o.Compression, runtime.GOMAXPROCS(0))
		} else {
			pqw.fw, err = pqarrow.NewFileWriter(s, aw, nestedWriterProperties(codec), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		}
		if err != nil {
			aw.Close()
			return nil, fmt.Errorf("create parquet writer: %w", err)
		}
		return pqw, nil
	}
	return nil, fmt.Errorf("create record writer: %w: %v (want arrow, arrow-stream or parquet)", ErrUnknownFormat, format)
}

// nestedWriterProperties are the properties of pqarrow's column writers,
// which write the files of nested schemas (the list forms).
func nestedWriterProperties(codec compress.Compression) *parquet.WriterProperties {
	return parquet.NewWriterProperties(
		parquet.WithCompression(codec),
		parquet.WithDictionaryDefault(false),
		parquet.WithDictionaryFor(FieldQueryID, true),
		// No min/max for the id columns: for doc ids they cost a
		// comparison a row and prune nothing; for query ids pqarrow
		// derives them by hashing every dictionary index (a tenth of
		// convert's CPU time), and evalgate reads every row group.
		parquet.WithStatsFor(FieldDocID, false),
		parquet.WithStatsFor(FieldQueryID, false),
		parquet.WithMaxRowGroupLength(math.MaxInt64),
	)
}

// parquetWriter cuts row groups at the first query boundary after target
// rows. Every canonical schema has the query id in column 0. It holds the
// records of a row group until the group is complete, then writes it:
// through flatFileWriter for flat schemas (the long forms), which encodes
// the columns itself, concurrently; through pqarrow column by column for
// nested ones, a utf8 query id column going in as a dictionary array
// built here from the runs of equal ids (one map look-up a query, not a
// hash a row as the column writer's own dictionary encoder does), which
// the column writer stores as the column chunk's dictionary page and RLE
// indices.
type parquetWriter struct {
	fw      *pqarrow.FileWriter // nested schemas
	flat    *flatFileWriter     // flat schemas: columns encoded concurrently
	out     *asyncWriter
	schema  *arrow.Schema
	target  int
	dictQID bool           // column 0 is a utf8 query id, dictionary-encoded here
	pending []arrow.Record // the open row group's records
	rows    int            // rows in the open row group
	last    string         // query id of the last row written
}

func (p *parquetWriter) Write(rec arrow.Record) error {
	n := int(rec.NumRows())
	qids, ok := rec.Column(0).(*array.String)
	if !ok {
		p.add(rec, 0, n)
		if p.rows >= p.target {
			return p.flush()
		}
		return nil
	}
	for start := 0; start < n; {
		// The group may end at the first query boundary at or after row i.
		i := start + max(p.target-p.rows, 0)
		if i >= n {
			p.add(rec, start, n)
			break
		}
		prev := p.last
		if i > start {
			prev = qids.Value(i - 1)
		}
		for i < n && qids.Value(i) == prev {
			i++
		}
		p.add(rec, start, i)
		if i == n {
			break
		}
		if err := p.flush(); err != nil {
			return err
		}
		start = i
	}
	if n > 0 {
		p.last = strings.Clone(qids.Value(n - 1))
	}
	return nil
}

// add holds rows [from, to) of rec for the open row group.
func (p *parquetWriter) add(rec arrow.Record, from, to int) {
	if from == to {
		return
	}
	if from == 0 && to == int(rec.NumRows()) {
		rec.Retain()
		p.pending = append(p.pending, rec)
	} else {
		p.pending = append(p.pending, rec.NewSlice(int64(from), int64(to)))
	}
	p.rows += to - from
}

// flush writes the open row group.
func (p *parquetWriter) flush() error {
	if p.rows == 0 {
		return nil
	}
	if p.flat != nil {
		return p.flushFlat()
	}
	defer func() {
		for _, r := range p.pending {
			r.Release()
		}
		p.pending, p.rows = p.pending[:0], 0
	}()
	p.fw.NewRowGroup()
	for c, f := range p.schema.Fields() {
		if c == 0 && p.dictQID {
			if d := p.queryDictionary(); d != nil {
				err := p.fw.WriteColumnData(d)
				d.Release()
				if err != nil {
					return err
				}
				continue
			}
		}
		chunks := make([]arrow.Array, len(p.pending))
		for i, r := range p.pending {
			chunks[i] = r.Column(c)
		}
		ch := arrow.NewChunked(f.Type, chunks)
		err := p.fw.WriteColumnChunked(ch, 0, int64(ch.Len()))
		ch.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// queryDictionary returns the query ids of the open row group as a
// dictionary array, or nil when one of its chunks is not a utf8 array
// without nulls.
func (p *parquetWriter) queryDictionary() *array.Dictionary {
	idx := make([]int32, 0, p.rows)
	dict := NewStrings(0, 0)
	seen := make(map[string]int32)
	j, prev := int32(-1), ""
	for _, r := range p.pending {
		col, ok := r.Column(0).(*array.String)
		if !ok || col.NullN() != 0 {
			return nil
		}
		for i := range col.Len() {
			if v := col.Value(i); j < 0 || v != prev {
				k, ok := seen[v]
				if !ok {
					k = int32(dict.Len())
					dict.Append(v)
					seen[v] = k // v views a pending record, alive until the flush ends
				}
				j, prev = k, v
			}
			idx = append(idx, j)
		}
	}
	values := dict.Array()
	defer values.Release()
	indices := Int32Array(idx, nil)
	defer indices.Release()
	return array.NewDictionaryArray(&arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}, indices, values)
}

func (p *parquetWriter) Close() error {
	err := p.flush()
	switch {
	case p.flat != nil && err == nil:
		err = p.flat.close()
	case p.flat != nil:
		p.flat.wait() // the queued groups' records are released
	case err == nil:
		err = p.fw.Close()
	}
	if cerr := p.out.Close(); err == nil {
		err = cerr
	}
	return err
}

// asyncWriter passes what is written to it on to w from a goroutine of its
// own, in blocks of asyncBlock bytes, so that the encoder does not wait
// for the write system calls, nor for the disk when w writes past the
// page cache (atomicfile.CreateUncached). At most asyncBlocks blocks are
// in flight.
type asyncWriter struct {
	w    io.Writer
	buf  []byte
	todo chan []byte
	free chan []byte
	done chan struct{}
	errs firstError // of the writes
}

// firstError is the first error of a goroutine that works for others:
// recorded by that goroutine only, read by any at any time.
type firstError struct {
	err error
	set atomic.Bool // err is recorded
}

// record keeps err if it is the first error.
func (e *firstError) record(err error) {
	if err != nil && !e.set.Load() {
		e.err = err
		e.set.Store(true)
	}
}

// get returns the first error, or nil.
func (e *firstError) get() error {
	if e.set.Load() {
		return e.err
	}
	return nil
}

const (
	asyncBlock  = 4 << 20
	asyncBlocks = 4
)

func newAsyncWriter(w io.Writer) *asyncWriter {
	a := &asyncWriter{w: w, todo: make(chan []byte, asyncBlocks-1), free: make(chan []byte, asyncBlocks), done: make(chan struct{})}
	for range asyncBlocks {
		a.free <- atomicfile.AlignedBuffer(asyncBlock) // written without a copy past the page cache
	}
	a.buf = <-a.free
	go func() {
		defer close(a.done)
		for b := range a.todo {
			if a.errs.get() == nil {
				_, err := a.w.Write(b)
				a.errs.record(err)
			}
			a.free <- b[:0]
		}
	}()
	return a
}

func (a *asyncWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := copy(a.buf[len(a.buf):cap(a.buf)], p)
		a.buf = a.buf[:len(a.buf)+k]
		p = p[k:]
		if len(a.buf) == cap(a.buf) {
			a.todo <- a.buf
			a.buf = <-a.free
		}
	}
	return n, a.errs.get()
}

// Close writes what is buffered and waits for the writes to end; it does
// not close w.
func (a *asyncWriter) Close() error {
	if a.buf == nil {
		<-a.done
		return a.errs.get()
	}
	if len(a.buf) > 0 {
		a.todo <- a.buf
	}
	a.buf = nil
	close(a.todo)
	<-a.done
	return a.errs.get()
}

// ipcWriter is an Arrow IPC writer writing through an asyncWriter.
type ipcWriter struct {
	RecordWriter
	out *asyncWriter
}

func (w *ipcWriter) Close() error {
	err := w.RecordWriter.Close()
	if cerr := w.out.Close(); err == nil {
		err = cerr
	}
	return err
}

// positionWriter answers Seek(0, io.SeekCurrent) with the number of bytes
// written, which is all the IPC file writer asks of a seeker.
type positionWriter struct {
	w   io.Writer
	pos int64
}

func (p *positionWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.pos += int64(n)
	return n, err
}

func (p *positionWriter) Seek(offset int64, whence int) (int64, error) {
	if offset == 0 && whence == io.SeekCurrent {
		return p.pos, nil
	}
	return 0, errors.New("seek: only the current position is supported")
}
