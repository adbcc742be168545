package schema

import (
	"context"
	"fmt"
	"runtime"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/memory"
)

// Role says whether a file is read as the gold set or as a run.
type Role uint8

// The roles.
const (
	RoleGold Role = iota + 1
	RoleRun
)

func (r Role) String() string {
	if r == RoleGold {
		return "gold"
	}
	return "run"
}

// Batch is one record batch read from an input file, in one of the four
// input forms.
type Batch struct {
	Record arrow.Record
	Form   Form
	File   string
	// Lines holds the 1-based source line of each row, for text formats;
	// nil for Arrow and Parquet, whose rows are numbered from FirstRow.
	// A batch whose rows come from several places (a regrouped run) has
	// Lines, with -r for a row r of an Arrow or Parquet file.
	Lines    []int64
	FirstRow int64
}

// At returns an InputError locating row i of the batch, with err as cause.
func (b *Batch) At(i int, field string, err error) *InputError {
	e := &InputError{File: b.File, Field: field, Err: err}
	switch {
	case b.Lines == nil:
		e.Row = b.FirstRow + int64(i)
	case b.Lines[i] < 0:
		e.Row = -b.Lines[i]
	default:
		e.Line = b.Lines[i]
	}
	return e
}

// Release drops the caller's reference to the record. The Batch stays
// usable by holders of other references (taken with Record.Retain).
func (b *Batch) Release() {
	if b.Record != nil {
		b.Record.Release()
	}
}

// Reader reads an input file as record batches.
type Reader interface {
	// Next returns the next batch, or io.EOF after the last. When the file
	// has errors, Next stops returning batches and, once the whole file has
	// been checked, returns them as an *ErrorList (or a single
	// *InputError). The caller must Release every batch.
	Next(ctx context.Context) (*Batch, error)
	// Form is the form of the batches.
	Form() Form
	// Close stops reading and frees resources. It is safe to call at any
	// time and more than once.
	Close() error
}

// Options controls how files are read.
type Options struct {
	Format Format // FormatAuto: detect
	// Parallelism is the number of goroutines parsing text blocks
	// (default GOMAXPROCS).
	Parallelism int
	// BlockSize is the size of the text blocks parsed in parallel
	// (default 4 MiB; 1 MiB for a gold set).
	BlockSize int
	// MaxErrors is the number of errors kept in full (default
	// DefaultErrorLimit); the rest are counted.
	MaxErrors int
	// Allocator for Arrow and Parquet readers (default the Go allocator).
	Allocator memory.Allocator
	// ReuseMemory lets the reader decode later batches (of a TREC run or a
	// flat Parquet file) into the memory of batches already released, for a caller that keeps nothing of a
	// batch after releasing it: no string viewing its values (copy what
	// is kept). Without it every batch is new memory the collector frees,
	// and views stay valid as long as they are referenced.
	ReuseMemory bool
	// SkipRanks lets the reader leave a long run's rank column unread,
	// every rank null, for a caller that orders documents by score: a
	// Parquet file of flat columns then decodes no ranks, and a TREC run
	// parses none (a line still needs its six fields); other files read
	// them as usual.
	SkipRanks bool
}

// goldBlockSize is the default Options.BlockSize of a gold set: on 1M
// queries, loading it with 1 MiB blocks took 1.61 s against 1.62 s with
// 4 MiB ones and 21 MB less peak RSS (200k: 372 against 376 ms, 32 MB
// less; alternating runs of score on Arrow IPC, 2 cores).
const goldBlockSize = 1 << 20

func (o Options) withDefaults() Options {
	if o.Parallelism <= 0 {
		o.Parallelism = runtime.GOMAXPROCS(0)
	}
	if o.BlockSize <= 0 {
		o.BlockSize = 4 << 20
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	return o
}

// Open opens path as the given role. The format comes from opts.Format, or
// is detected from the file's leading bytes and extension.
func Open(ctx context.Context, path string, role Role, opts Options) (Reader, error) {
	if role == RoleGold && opts.BlockSize <= 0 {
		// A gold set is read whole into an index, its batches held until
		// then: 4 MiB blocks put all of a 200k-query qrels file (23 MB) in
		// flight at once, 1 MiB blocks a quarter of it.
		opts.BlockSize = goldBlockSize
	}
	opts = opts.withDefaults()
	format := opts.Format
	if format == FormatAuto {
		f, err := DetectFormat(path)
		if err != nil {
			return nil, err
		}
		format = f
	}
	switch format {
	case FormatTREC:
		if role == RoleGold {
			return openText(ctx, path, FormGoldLong, parseQrelsBlock, opts)
		}
		var mem *recycler
		if opts.ReuseMemory {
			mem = &batchMemory
		}
		parse := func(file string, data []byte) blockResult { return parseTRECRun(file, data, mem, opts.SkipRanks) }
		return openText(ctx, path, FormRunLong, parse, opts)
	case FormatJSONL:
		if role == RoleGold {
			return openText(ctx, path, FormGoldList, parseJSONLGoldBlock, opts)
		}
		return openText(ctx, path, FormRunList, parseJSONLRunBlock, opts)
	case FormatArrow, FormatArrowStream, FormatParquet:
		return openColumnar(ctx, path, role, format, opts)
	}
	return nil, fmt.Errorf("open %s: %w %v", path, ErrUnknownFormat, format)
}
