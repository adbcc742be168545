package corpus

import (
	"context"
	"fmt"
	"runtime"
	"slices"

	"github.com/evalgate/evalgate/schema"
)

// Options controls how a corpus is read. The zero value reads with the
// defaults.
type Options struct {
	Format Format // FormatAuto: detect (DetectFormat)
	// Parallelism is the number of goroutines parsing blocks of a text
	// corpus (default GOMAXPROCS).
	Parallelism int
	// BlockSize is the size of those blocks (default 4 MiB).
	BlockSize int
	// MaxErrors is the number of errors kept in full (default
	// schema.DefaultErrorLimit); the rest are counted.
	MaxErrors int
	// TempDir is where a gzipped Parquet corpus is decompressed (Parquet
	// needs random access); default os.TempDir().
	TempDir string
}

func (o Options) withDefaults() Options {
	if o.Parallelism <= 0 {
		o.Parallelism = runtime.GOMAXPROCS(0)
	}
	if o.BlockSize <= 0 {
		o.BlockSize = 4 << 20
	}
	if o.MaxErrors <= 0 {
		o.MaxErrors = schema.DefaultErrorLimit
	}
	return o
}

// Result is what Load found.
type Result struct {
	// Docs holds the wanted documents found, by id.
	Docs map[string]Document
	// Missing lists the wanted ids the corpus does not have, sorted.
	Missing []string
	// Read counts the documents of the corpus, wanted or not.
	Read int64
	// Duplicates counts the repeats of wanted documents that were
	// identical to their first occurrence (a repeat that differs is an
	// error).
	Duplicates int64
	// Format is the format the corpus was read as.
	Format Format
}

// Load reads the corpus at path in one pass and returns the documents whose
// ids are in want (repeats in want are harmless), and the wanted ids it
// does not have. Memory grows with the wanted documents, not with the
// corpus.
//
// Every document of the corpus is checked, wanted or not: a bad line or
// row fails the load with an *schema.InputError (or a *schema.ErrorList of
// them, all of the file's), naming the file, the line or row, the field
// and the cause. A wanted id that appears twice with a different title or
// text is such an error too, naming both places; repeats of ids nobody
// wants are not checked (that would need memory for every id). Other
// failures (the file cannot be opened or read, ctx is done) are returned
// as they are.
func Load(ctx context.Context, path string, want []string, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	format := opts.Format
	if format == FormatAuto {
		f, err := DetectFormat(path)
		if err != nil {
			return nil, err
		}
		format = f
	}
	acc := newAccumulator(path, format, want, opts.MaxErrors)
	var err error
	switch format {
	case FormatJSONL:
		err = loadText(ctx, path, jsonlParser{}, acc, opts)
	case FormatTSV:
		err = loadText(ctx, path, tsvParser{}, acc, opts)
	case FormatParquet:
		err = loadParquet(ctx, path, acc, opts)
	default:
		return nil, fmt.Errorf("load corpus %s: unknown format %v", path, format)
	}
	if err != nil {
		return nil, err
	}
	if err := acc.errs.Err(); err != nil {
		return nil, err
	}
	return acc.result(), nil
}

// accumulator merges the wanted documents of a corpus, in file order.
type accumulator struct {
	file   string
	format Format
	want   wantSet
	docs   map[string]kept
	read   int64
	dups   int64
	errs   schema.ErrorList
	// truncated is set once a block has counted errors without keeping
	// them: every later error is counted too, so that the errors kept are
	// the first ones of the file.
	truncated bool
}

// kept is a wanted document and where it was first seen.
type kept struct {
	doc Document
	pos int64
}

func newAccumulator(file string, format Format, want []string, maxErrors int) *accumulator {
	a := &accumulator{file: file, format: format, want: make(wantSet, len(want)), docs: make(map[string]kept)}
	for _, id := range want {
		a.want[id] = struct{}{}
	}
	a.errs.Limit = maxErrors
	return a
}

// addBlock merges the result of one block, positions already made
// absolute.
func (a *accumulator) addBlock(res blockResult) {
	for _, e := range res.errs {
		if a.truncated {
			a.errs.AddCount(1)
		} else {
			a.errs.Add(e)
		}
	}
	a.errs.AddCount(res.dropped)
	a.truncated = a.truncated || res.dropped > 0
	a.read += res.docs
	for _, f := range res.found {
		a.add(f)
	}
}

// add merges one wanted document found at f.pos.
func (a *accumulator) add(f found) {
	first, seen := a.docs[f.doc.ID]
	if !seen {
		a.docs[f.doc.ID] = kept{doc: f.doc, pos: f.pos}
		return
	}
	if first.doc == f.doc {
		a.dups++
		return
	}
	what := "text"
	if first.doc.Title != f.doc.Title {
		what = "title"
		if first.doc.Text != f.doc.Text {
			what = "title and text"
		}
	}
	e := &schema.InputError{File: a.file, Field: f.field, Err: fmt.Errorf("%w: document %q is also at %s %d, with a different %s",
		schema.ErrDuplicate, f.doc.ID, a.posWord(), first.pos, what)}
	if a.format == FormatParquet {
		e.Row = f.pos
	} else {
		e.Line = f.pos
	}
	a.addError(e)
}

func (a *accumulator) posWord() string {
	if a.format == FormatParquet {
		return "row"
	}
	return "line"
}

func (a *accumulator) addError(e *schema.InputError) {
	if a.truncated {
		a.errs.AddCount(1)
		return
	}
	a.errs.Add(e)
}

func (a *accumulator) result() *Result {
	r := &Result{Docs: make(map[string]Document, len(a.docs)), Read: a.read, Duplicates: a.dups, Format: a.format}
	for id, k := range a.docs {
		r.Docs[id] = k.doc
	}
	for id := range a.want {
		if _, ok := a.docs[id]; !ok {
			r.Missing = append(r.Missing, id)
		}
	}
	slices.Sort(r.Missing)
	return r
}
