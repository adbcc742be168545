package schema

import (
	"context"
	"errors"
	"fmt"
	"io"
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
		if rw == nil {
			if rw, err = NewRecordWriterWith(w, to, b.Record.Schema(), o); err != nil {
				b.Release()
				return rows, fmt.Errorf("write %s: %w", name, err)
			}
		}
		rows += b.Record.NumRows()
		err = rw.Write(b.Record)
		b.Release()
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
