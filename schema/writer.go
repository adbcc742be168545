package schema

import (
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v16/arrow"
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

// NewRecordWriter returns a writer of Arrow IPC file, Arrow IPC stream or
// Parquet (zstd) onto w. The IPC file format needs to know its position in
// w; a plain io.Writer is fine as long as writing starts at offset 0.
func NewRecordWriter(w io.Writer, format Format, s *arrow.Schema) (RecordWriter, error) {
	switch format {
	case FormatArrow:
		fw, err := ipc.NewFileWriter(&positionWriter{w: w}, ipc.WithSchema(s), ipc.WithZstd())
		if err != nil {
			return nil, fmt.Errorf("create arrow file writer: %w", err)
		}
		return fw, nil
	case FormatArrowStream:
		return ipc.NewWriter(w, ipc.WithSchema(s), ipc.WithZstd()), nil
	case FormatParquet:
		pw, err := pqarrow.NewFileWriter(s, w,
			parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)),
			pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
		if err != nil {
			return nil, fmt.Errorf("create parquet writer: %w", err)
		}
		return &parquetWriter{pw}, nil
	}
	return nil, fmt.Errorf("create record writer: %w: %v (want arrow, arrow-stream or parquet)", ErrUnknownFormat, format)
}

type parquetWriter struct{ *pqarrow.FileWriter }

func (p *parquetWriter) Write(rec arrow.Record) error { return p.FileWriter.WriteBuffered(rec) }

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
