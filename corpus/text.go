package corpus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/evalgate/evalgate/schema"
)

// Text corpora (JSONL and TSV) are read in one pass: one goroutine cuts
// the file into blocks of whole lines, Parallelism goroutines parse them,
// and the caller's goroutine takes their results in file order, so that
// line numbers, duplicates and errors come out as a sequential read would
// give them. Memory: the blocks in flight, and the wanted documents.

// utf8BOM is U+FEFF in UTF-8: at the start of a file it marks the encoding
// and is dropped; anywhere else it is data.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// lineParser parses one line (without its line end, not blank, valid
// UTF-8) of a text corpus; first is set for the first such line of the
// file. It returns ok true for a document line, with doc filled in only
// when the id is in want (a document not wanted is checked, then
// dropped); ok false and le set for a bad line; ok false and le nil for a
// line that holds no document (a comment, a header).
type lineParser interface {
	parseLine(l []byte, first bool, want wantSet) (doc found, ok bool, le *lineError)
}

// wantSet is the set of wanted document ids.
type wantSet map[string]struct{}

// has reports whether id is wanted, without allocating.
func (w wantSet) has(id []byte) bool {
	_, ok := w[string(id)]
	return ok
}

// lineError is a problem with one line: column (1-based, 0 if none),
// field name and cause.
type lineError struct {
	col   int
	field string
	err   error
}

// found is a wanted document and where it is.
type found struct {
	doc   Document
	field string // the key or column the id came from
	pos   int64  // line or row; within a block, 1-based from its start
}

// blockResult is what parsing one block gives. Lines are relative to the
// block. err, when set, is a read error at the start of the block (and
// the block has nothing else).
type blockResult struct {
	found   []found
	lines   int64 // lines in the block
	docs    int64 // documents in the block, wanted or not
	errs    []*schema.InputError
	dropped int // errors counted beyond errs
	err     error
}

// parseBlock parses the lines of data with p. At most maxErrors errors
// are kept, the rest counted. first is set for the first block of the
// file.
func parseBlock(file string, data []byte, first bool, p lineParser, want wantSet, maxErrors int) blockResult {
	var res blockResult
	checkUTF8 := !utf8.Valid(data)
	firstLine := first
	for len(data) > 0 {
		res.lines++
		var l []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			l, data = data[:i], data[i+1:]
		} else {
			l, data = data, nil
		}
		if n := len(l); n > 0 && l[n-1] == '\r' {
			l = l[:n-1]
		}
		if isBlank(l) {
			continue
		}
		var le *lineError
		if checkUTF8 {
			if col, bad := invalidUTF8(l); bad {
				le = &lineError{col: col, err: schema.ErrInvalidUTF8}
			}
		}
		var f found
		var ok bool
		if le == nil {
			f, ok, le = p.parseLine(l, firstLine, want)
		}
		firstLine = false
		switch {
		case le != nil:
			if len(res.errs) < maxErrors {
				res.errs = append(res.errs, &schema.InputError{File: file, Line: res.lines, Column: le.col, Field: le.field, Err: le.err})
			} else {
				res.dropped++
			}
		case ok:
			res.docs++
			if f.doc.ID != "" {
				f.pos = res.lines
				res.found = append(res.found, f)
			}
		}
	}
	return res
}

// isBlank reports whether l holds only white space.
func isBlank(l []byte) bool {
	for _, c := range l {
		if c != ' ' && c != '\t' && c != '\r' && c != '\v' && c != '\f' {
			return false
		}
	}
	return true
}

// invalidUTF8 returns the 1-based byte column of the first invalid UTF-8
// sequence of l.
func invalidUTF8(l []byte) (int, bool) {
	for i := 0; i < len(l); {
		r, size := utf8.DecodeRune(l[i:])
		if r == utf8.RuneError && size <= 1 {
			return i + 1, true
		}
		i += size
	}
	return 0, false
}

// textJob is one block to parse and where its result goes.
type textJob struct {
	data  []byte
	buf   *[]byte
	first bool
	out   chan<- blockResult
}

// loadText reads the text corpus at path with p and merges the wanted
// documents into acc.
func loadText(ctx context.Context, path string, p lineParser, acc *accumulator, opts Options) error {
	src, err := schema.OpenStream(path)
	if err != nil {
		return err
	}
	defer src.Close()

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	order := make(chan chan blockResult, 2*opts.Parallelism+2)
	work := make(chan textJob, opts.Parallelism)
	wg.Add(1 + opts.Parallelism)
	go func() {
		defer wg.Done()
		defer close(work)
		defer close(order)
		split(ctx, path, src, opts.BlockSize, work, order)
	}()
	for range opts.Parallelism {
		go func() {
			defer wg.Done()
			for j := range work {
				res := parseBlock(path, j.data, j.first, p, acc.want, acc.errs.Limit)
				schema.RecycleBlock(j.buf)
				j.out <- res // buffered: never blocks
			}
		}()
	}

	lineBase := int64(0)
	for out := range order {
		var res blockResult
		select {
		case res = <-out:
		case <-ctx.Done():
			return ctx.Err()
		}
		if res.err != nil {
			acc.errs.Add(readError(path, lineBase, res.err))
			break
		}
		for _, e := range res.errs {
			e.Line += lineBase
		}
		for i := range res.found {
			res.found[i].pos += lineBase
		}
		acc.addBlock(res)
		lineBase += res.lines
	}
	return ctx.Err()
}

// split reads src in blocks of whole lines (schema.LineBlocks) and hands
// them to the parsers, in order.
func split(ctx context.Context, path string, src io.Reader, blockSize int, work chan<- textJob, order chan<- chan blockResult) {
	blocks := schema.NewLineBlocks(src, path, blockSize)
	for {
		data, buf, first, err := blocks.Next()
		if err == io.EOF {
			return
		}
		out := make(chan blockResult, 1)
		if err != nil {
			out <- blockResult{err: err}
		}
		select {
		case order <- out:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
		select {
		case work <- textJob{data: data, buf: buf, first: first, out: out}:
		case <-ctx.Done():
			return
		}
	}
}

// readError turns an error reading the file, after lineBase lines, into
// the error to report: an input error naming the file (and the line, when
// it is where the problem is), or an I/O error.
func readError(path string, lineBase int64, err error) error {
	var own *schema.InputError
	var gz *schema.GzipError
	switch {
	case errors.As(err, &gz):
		// It says where, in compressed bytes; the last line decoded is
		// not where the problem is.
		return &schema.InputError{File: path, Err: gz}
	case errors.As(err, &own):
		if own.Line == 0 && !errors.Is(err, schema.ErrLineEnds) {
			own.Line = lineBase + 1
		}
		return own
	case isCorrupt(err):
		return &schema.InputError{File: path, Line: lineBase + 1, Err: err}
	}
	return fmt.Errorf("read %s: %w", path, err)
}

func isCorrupt(err error) bool { return errors.Is(err, schema.ErrCorrupt) }
