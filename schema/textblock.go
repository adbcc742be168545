package schema

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
)

// MaxLineBytes bounds the length of one line of a text input.
const MaxLineBytes = 64 << 20

// utf8BOM is U+FEFF encoded in UTF-8. Some tools (Notepad, Excel,
// PowerShell) write it at the start of a text file, where it marks the
// encoding and is not data: readers drop it there. Anywhere else it is an
// ordinary character (part of an id in TREC, an error in JSON).
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// trimBOM drops a byte-order mark at the start of b, the start of a file.
func trimBOM(b []byte) []byte { return bytes.TrimPrefix(b, utf8BOM) }

// blockResult is what a block parser returns. Line numbers are relative to
// the block (the first line of the block is line 1).
type blockResult struct {
	rec    arrow.Record
	lines  []int64
	nLines int64
	errs   []*InputError
	// dropped counts errors beyond the ones kept in errs.
	dropped int
}

// blockParser parses one block of whole lines. file names the input in
// errors.
type blockParser func(file string, data []byte) blockResult

type textJob struct {
	data []byte
	buf  *[]byte
	out  chan blockResult
}

// pending is one block in file order: either a result to wait for or a read
// error at that point of the file.
type pending struct {
	out chan blockResult
	err error
}

// textReader parses a text file in parallel blocks and returns the batches
// in file order.
type textReader struct {
	file   string
	form   Form
	cancel context.CancelFunc
	order  chan pending
	wg     sync.WaitGroup
	closer io.Closer

	lineBase int64
	errs     ErrorList
	// truncated is set once a block has counted errors without keeping
	// them: every later error comes after those in the file, so it is
	// counted too, keeping the errors shown the first ones of the file.
	truncated bool
	done      bool
	closeMu   sync.Once
}

func openText(ctx context.Context, path string, form Form, parse blockParser, opts Options) (*textReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	var src io.Reader = f
	closer := io.Closer(f)
	head := make([]byte, 2)
	n, _ := io.ReadFull(f, head)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("seek %s: %w", path, err)
	}
	if n == 2 && bytes.Equal(head, magicGzip) {
		zr, err := newGzipReader(f)
		if err != nil {
			f.Close()
			return nil, &InputError{File: path, Err: err}
		}
		src = zr
	}
	ctx, cancel := context.WithCancel(ctx)
	r := &textReader{
		file:   path,
		form:   form,
		cancel: cancel,
		order:  make(chan pending, 2*opts.Parallelism+2),
		closer: closer,
	}
	r.errs.Limit = opts.MaxErrors
	work := make(chan textJob, opts.Parallelism)
	r.wg.Add(1 + opts.Parallelism)
	go func() {
		defer r.wg.Done()
		defer close(work)
		defer close(r.order)
		r.split(ctx, src, opts.BlockSize, work)
	}()
	for i := 0; i < opts.Parallelism; i++ {
		go func() {
			defer r.wg.Done()
			for j := range work {
				res := parse(path, j.data)
				RecycleBlock(j.buf)
				j.out <- res // buffered: never blocks
			}
		}()
	}
	return r, nil
}

// split reads src in blocks of whole lines (LineBlocks) and hands them to
// the parsers, recording their order.
func (r *textReader) split(ctx context.Context, src io.Reader, blockSize int, work chan<- textJob) {
	blocks := NewLineBlocks(src, r.file, blockSize)
	for {
		data, buf, _, err := blocks.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			r.send(ctx, pending{err: err})
			return
		}
		p := pending{out: make(chan blockResult, 1)}
		if !r.send(ctx, p) {
			return
		}
		select {
		case work <- textJob{data: data, buf: buf, out: p.out}:
		case <-ctx.Done():
			p.out <- blockResult{} // nobody will parse it; unblock Close
			return
		}
	}
}

func (r *textReader) send(ctx context.Context, p pending) bool {
	select {
	case r.order <- p:
		return true
	case <-ctx.Done():
		return false
	}
}

func (r *textReader) Form() Form { return r.form }

func (r *textReader) Next(ctx context.Context) (*Batch, error) {
	if r.done {
		return nil, io.EOF
	}
	for {
		var p pending
		var ok bool
		select {
		case p, ok = <-r.order:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if !ok {
			r.done = true
			if err := r.errs.Err(); err != nil {
				return nil, err
			}
			return nil, io.EOF
		}
		if p.err != nil {
			r.done = true
			r.errs.Add(r.readError(p.err))
			return nil, r.errs.Err()
		}
		var res blockResult
		select {
		case res = <-p.out:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		for _, e := range res.errs {
			e.Line += r.lineBase
			if r.truncated {
				r.errs.AddCount(1)
			} else {
				r.errs.Add(e)
			}
		}
		r.errs.AddCount(res.dropped)
		r.truncated = r.truncated || res.dropped > 0
		for i := range res.lines {
			res.lines[i] += r.lineBase
		}
		r.lineBase += res.nLines
		if r.errs.Len() > 0 || res.rec == nil || res.rec.NumRows() == 0 {
			if res.rec != nil {
				res.rec.Release()
			}
			continue
		}
		return &Batch{Record: res.rec, Form: r.form, File: r.file, Lines: res.lines}, nil
	}
}

// readError turns an error of the underlying reader into an input error
// that names where in the file it happened.
func (r *textReader) readError(err error) error {
	ie := &InputError{File: r.file, Line: r.lineBase + 1}
	var own *InputError
	var gz *GzipError
	var corrupt flate.CorruptInputError
	switch {
	case errors.As(err, &own):
		own.Line = r.lineBase + 1
		return own
	case errors.As(err, &gz):
		// It says where, in compressed bytes: the line would be the last
		// one decoded, which is not where the problem is.
		return &InputError{File: r.file, Err: gz}
	case errors.Is(err, io.ErrUnexpectedEOF):
		ie.Err = fmt.Errorf("%w: compressed stream ends early (truncated gzip?)", ErrCorrupt)
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader), errors.As(err, &corrupt):
		ie.Err = fmt.Errorf("%w: %v", ErrCorrupt, err)
	default:
		var pe *os.PathError
		if errors.As(err, &pe) {
			return fmt.Errorf("read %s: %w", r.file, err)
		}
		ie.Err = err
	}
	return ie
}

func (r *textReader) Close() error {
	var err error
	r.closeMu.Do(func() {
		r.cancel()
		for p := range r.order {
			if p.out != nil {
				// A parser may still be working on it; wait for the result
				// so its record is released.
				if res := <-p.out; res.rec != nil {
					res.rec.Release()
				}
			}
		}
		r.wg.Wait()
		err = r.closer.Close()
	})
	return err
}
