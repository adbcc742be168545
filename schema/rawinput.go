package schema

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/parquet/file"
	"github.com/apache/arrow/go/v16/parquet/pqarrow"
	"github.com/apache/arrow/go/v16/parquet/schema"
)

// Parquet input for readers of other kinds of data than gold sets and
// runs (package corpus), with the safeguards of Open. (Text input: see
// OpenStream.)

// ParquetColumns reads chosen top-level columns of a Parquet file as Arrow
// records, with the safeguards Open gives Parquet input: allocations
// bounded by the file's size, the stored Arrow schema checked before it is
// decoded, every column chunk opened and every nested column decoded once
// in the calling goroutine (where a panic of the Parquet library on corrupt
// data can be recovered), and every panic turned into an error. It reads
// one row group at a time: a record never spans two, so a dictionary
// column (one dictionary per row group) reads as one chunk, which pqarrow
// v16 requires.
type ParquetColumns struct {
	file    string
	pf      *file.Reader
	fr      *pqarrow.FileReader
	leaves  []int         // leaf column indices read
	sc      *arrow.Schema // of the records
	columns []string      // every top-level column of the file
	rg      int           // next row group to open
	rr      pqarrow.RecordReader
	row     int64 // 1-based row of the next record's first row
}

// parquetColumnsBatch is the number of rows of a record: small enough that
// a record of long documents stays a few tens of megabytes.
const parquetColumnsBatch = 4096

// OpenParquetColumns opens the Parquet file at path to read those of the
// top-level columns names that it has. A named column that is not a
// primitive column (a list, a struct) is an *InputError wrapping
// ErrTypeMismatch; a file with none of them, one wrapping
// ErrMissingColumn. A file that is not Parquet, or is corrupt, gives an
// *InputError wrapping ErrCorrupt. The caller must Close the reader.
func OpenParquetColumns(path string, names []string, opts Options) (*ParquetColumns, error) {
	opts = opts.withDefaults()
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	p := &ParquetColumns{file: path, row: 1}
	err = protect(func() error {
		info, err := f.Stat()
		if err != nil {
			return err
		}
		opts.Allocator = LimitedAllocator{Allocator: opts.Allocator, Limit: AllocationLimit(info.Size())}
		return p.open(f, opts, names)
	})
	if err != nil {
		if p.pf != nil {
			p.pf.Close() // closes f
		} else {
			f.Close()
		}
		var ie *InputError
		if errors.As(err, &ie) {
			ie.File = path
			return nil, ie
		}
		return nil, &InputError{File: path, Err: fmt.Errorf("%w: parquet: %v", ErrCorrupt, err)}
	}
	return p, nil
}

// open reads the metadata of f and finds the named columns. Column
// problems are *InputError without a file.
func (p *ParquetColumns) open(f *os.File, opts Options, names []string) error {
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return err
	}
	p.pf = pf
	if err := checkParquetArrowSchema(pf); err != nil {
		return err
	}
	if err := decodeNestedColumns(pf); err != nil {
		return err
	}
	sc := pf.MetaData().Schema
	root := sc.Root()
	p.columns = make([]string, root.NumFields())
	var top []int // top-level field indices read
	for i := range p.columns {
		name := root.Field(i).Name()
		p.columns[i] = name
		if !slices.Contains(names, name) {
			continue
		}
		if _, ok := root.Field(i).(*schema.PrimitiveNode); !ok {
			return &InputError{Field: name, Err: fmt.Errorf("%w: want a primitive column (a string or a number), got a nested one", ErrTypeMismatch)}
		}
		leaf := sc.ColumnIndexByName(name)
		if leaf < 0 {
			return fmt.Errorf("column %s: no leaf column", name)
		}
		top = append(top, i)
		p.leaves = append(p.leaves, leaf)
	}
	if len(top) == 0 {
		return &InputError{Err: fmt.Errorf("%w: want one of %v (the file has %v)", ErrMissingColumn, names, p.columns)}
	}
	p.fr, err = pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: parquetColumnsBatch}, opts.Allocator)
	if err != nil {
		return err
	}
	full, err := p.fr.Schema()
	if err != nil {
		return err
	}
	if full.NumFields() != root.NumFields() {
		return fmt.Errorf("arrow schema has %d fields, parquet schema %d", full.NumFields(), root.NumFields())
	}
	fields := make([]arrow.Field, len(top))
	for i, t := range top {
		fields[i] = full.Field(t)
	}
	p.sc = arrow.NewSchema(fields, nil)
	return nil
}

// Schema is the schema of the records: the columns found, in file order.
func (p *ParquetColumns) Schema() *arrow.Schema { return p.sc }

// FileColumns names every top-level column of the file, for messages.
func (p *ParquetColumns) FileColumns() []string { return p.columns }

// Next returns the next record and the 1-based number of its first row in
// the file, or io.EOF after the last. The record is valid until the next
// call; Retain it to keep it. A failure is an *InputError wrapping
// ErrCorrupt, naming the first row of the batch that could not be read.
func (p *ParquetColumns) Next() (rec arrow.Record, firstRow int64, err error) {
	err = protect(func() error {
		var err error
		rec, err = p.next()
		return err
	})
	if err == io.EOF {
		return nil, 0, io.EOF
	}
	if err != nil {
		return nil, 0, &InputError{File: p.file, Row: p.row, Err: fmt.Errorf("%w: %v", ErrCorrupt, err)}
	}
	first := p.row
	p.row += rec.NumRows()
	return rec, first, nil
}

// next returns the next non-empty record, opening row groups in turn.
func (p *ParquetColumns) next() (arrow.Record, error) {
	for {
		if p.rr == nil {
			if p.rg >= p.pf.NumRowGroups() {
				return nil, io.EOF
			}
			rr, err := p.fr.GetRecordReader(context.Background(), p.leaves, []int{p.rg})
			if err != nil {
				return nil, err
			}
			p.rr, p.rg = rr, p.rg+1
		}
		if p.rr.Next() {
			if rec := p.rr.Record(); rec.NumRows() > 0 {
				return rec, nil
			}
			continue
		}
		if err := p.rr.Err(); err != nil && err != io.EOF {
			return nil, err
		}
		p.rr.Release()
		p.rr = nil
	}
}

// Close releases the reader and closes the file.
func (p *ParquetColumns) Close() error {
	if p.rr != nil {
		p.rr.Release()
		p.rr = nil
	}
	return p.pf.Close()
}
