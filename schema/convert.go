package schema

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v16/arrow"
)

// Convert writes every batch r reads to w (named name in errors) in
// format to, with the schema of the first batch, and returns the rows
// written. The reader's errors are returned as they are, the writer's as
// "write name: cause"; a reader that yields no batch is an input error
// (there is nothing to take a schema from). w is not closed; on an error
// it holds part of the output.
func Convert(ctx context.Context, r Reader, w io.Writer, name string, to Format, o WriterOptions) (rows int64, err error) {
	var rw RecordWriter
	var file string
	defer func() {
		if rw != nil && err != nil {
			rw.Close() // stops its goroutines; the output is the caller's to discard
		}
	}()
	for {
		b, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return rows, err
		}
		file = b.File
		rec, err := writable(b, to, o)
		b.Release()
		if err != nil {
			return rows, fmt.Errorf("write %s: %w", name, err)
		}
		if rw == nil {
			if rw, err = NewRecordWriterWith(w, to, rec.Schema(), o); err != nil {
				rec.Release()
				return rows, fmt.Errorf("write %s: %w", name, err)
			}
		}
		rows += rec.NumRows()
		err = rw.Write(rec)
		rec.Release()
		if err != nil {
			return rows, fmt.Errorf("write %s: %w", name, err)
		}
	}
	if rw == nil {
		return 0, &InputError{File: file, Err: fmt.Errorf("%w: no rows", ErrMissingField)}
	}
	closing := rw
	rw = nil // closed here, not again by the deferred Close
	if err := closing.Close(); err != nil {
		return rows, fmt.Errorf("write %s: %w", name, err)
	}
	return rows, nil
}

// writable returns the record of b as Convert writes it in format to, a
// new reference: a long-form run's query ids run-end encoded in Arrow IPC
// (one id a query: a few bytes a query where the ids took about a fifth
// of the file, and the join finds each query's rows without comparing
// ids), unless o.PlainQueryIDs, and one a row in Parquet (whose writer
// dictionary-encodes them).
func writable(b *Batch, to Format, o WriterOptions) (arrow.Record, error) {
	switch {
	case b.Form != FormRunLong:
		b.Record.Retain()
		return b.Record, nil
	case to == FormatParquet || o.PlainQueryIDs:
		return DecodeQueryRuns(b.Record)
	}
	return EncodeQueryRuns(b.Record)
}
