package schema

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/apache/arrow/go/v16/arrow/ipc"
	"github.com/apache/arrow/go/v16/parquet"
	"github.com/apache/arrow/go/v16/parquet/compress"
	"github.com/apache/arrow/go/v16/parquet/pqarrow"
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
	// Compression is the Parquet codec: "snappy" (the default), "zstd" or
	// "none". Snappy decodes several times faster than zstd for files
	// about 1.3 times as large, and reading is what a converted file is
	// for (docs/architecture.md, "Columnar input"). Arrow IPC files are
	// written uncompressed, to be read without decoding.
	Compression string
	// RowGroupRows is the number of rows after which a Parquet row group
	// ends, at the next query boundary (default DefaultRowGroupRows).
	RowGroupRows int
}

// DefaultRowGroupRows is the default Parquet row group size: small
// enough for a reader to decode several row groups in parallel in bounded
// memory, large enough for the per-group overhead not to matter.
const DefaultRowGroupRows = 256 << 10

// ParquetCodec parses a --compression value.
func ParquetCodec(name string) (compress.Compression, error) {
	switch strings.ToLower(name) {
	case "", "snappy":
		return compress.Codecs.Snappy, nil
	case "zstd":
		return compress.Codecs.Zstd, nil
	case "none", "uncompressed":
		return compress.Codecs.Uncompressed, nil
	}
	return 0, fmt.Errorf("unknown compression %q (want snappy, zstd or none)", name)
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
// group) and plain doc ids (nearly all distinct within a query: a
// dictionary would be as large as the column), and row groups that end at
// query boundaries, so that a query's rows never span two of them.
func NewRecordWriterWith(w io.Writer, format Format, s *arrow.Schema, o WriterOptions) (RecordWriter, error) {
	switch format {
	case FormatArrow:
		fw, err := ipc.NewFileWriter(&positionWriter{w: w}, ipc.WithSchema(s))
		if err != nil {
			return nil, fmt.Errorf("create arrow file writer: %w", err)
		}
		return fw, nil
	case FormatArrowStream:
		return ipc.NewWriter(w, ipc.WithSchema(s)), nil
	case FormatParquet:
		codec, err := ParquetCodec(o.Compression)
		if err != nil {
			return nil, fmt.Errorf("create parquet writer: %w", err)
		}
		rows := o.RowGroupRows
		if rows <= 0 {
			rows = DefaultRowGroupRows
		}
		pw, err := pqarrow.NewFileWriter(s, w,
			parquet.NewWriterProperties(
				parquet.WithCompression(codec),
				parquet.WithDictionaryDefault(false),
				parquet.WithDictionaryFor(FieldQueryID, true),
				parquet.WithMaxRowGroupLength(math.MaxInt64),
			),
			pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			return nil, fmt.Errorf("create parquet writer: %w", err)
		}
		return &parquetWriter{fw: pw, target: rows}, nil
	}
	return nil, fmt.Errorf("create record writer: %w: %v (want arrow, arrow-stream or parquet)", ErrUnknownFormat, format)
}

// parquetWriter cuts row groups at the first query boundary after target
// rows. Every canonical schema has the query id in column 0.
type parquetWriter struct {
	fw     *pqarrow.FileWriter
	target int
	rows   int    // rows in the open row group
	last   string // query id of the last row written
}

func (p *parquetWriter) Write(rec arrow.Record) error {
	qids, ok := rec.Column(0).(*array.String)
	if !ok {
		return p.fw.WriteBuffered(rec)
	}
	n := int(rec.NumRows())
	start := 0
	for i := 0; i < n; i++ {
		id := qids.Value(i)
		if p.rows >= p.target && id != p.last {
			if err := p.write(rec, start, i); err != nil {
				return err
			}
			p.fw.NewBufferedRowGroup()
			p.rows, start = 0, i
		}
		p.rows++
		p.last = id
	}
	p.last = strings.Clone(p.last)
	return p.write(rec, start, n)
}

func (p *parquetWriter) write(rec arrow.Record, from, to int) error {
	if from == to {
		return nil
	}
	if from == 0 && to == int(rec.NumRows()) {
		return p.fw.WriteBuffered(rec)
	}
	s := rec.NewSlice(int64(from), int64(to))
	defer s.Release()
	return p.fw.WriteBuffered(s)
}

func (p *parquetWriter) Close() error { return p.fw.Close() }

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
