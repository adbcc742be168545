package schema

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// LineBlocks cuts a text stream into blocks of whole lines, to be parsed in
// parallel: the TREC and JSON Lines readers and the corpus loader read
// their files through it. A block is about the block size; one holding a
// line longer than that grows to hold it whole, up to MaxLineBytes. A
// byte-order mark at the start of the stream is dropped from the first
// block (which holds at least the whole first line), so that parsers never
// see it and line and column numbers are those of the text after it.
// Block buffers come from a pool: hand each back with RecycleBlock once its
// lines are parsed.
type LineBlocks struct {
	src   io.Reader
	file  string
	size  int
	carry []byte // the start of a line the last block cut
	eof   bool
	first bool  // the next block is the stream's first
	err   error // the error that ended the stream
}

// NewLineBlocks returns the blocks of src, a file named file in errors,
// of about blockSize bytes each.
func NewLineBlocks(src io.Reader, file string, blockSize int) *LineBlocks {
	return &LineBlocks{src: src, file: file, size: blockSize, first: true}
}

var blockPool sync.Pool

func getBlock(size int) *[]byte {
	if p, ok := blockPool.Get().(*[]byte); ok && cap(*p) >= size {
		*p = (*p)[:size]
		return p
	}
	b := make([]byte, size)
	return &b
}

// RecycleBlock hands back the buffer of a block whose data is no longer
// used.
func RecycleBlock(buf *[]byte) { blockPool.Put(buf) }

// Next returns the next block: its lines (data, never empty), the buffer
// holding them (for RecycleBlock) and whether it is the stream's first
// block; io.EOF after the last. A line longer than MaxLineBytes, and a
// stream whose lines end with CR alone, are *InputErrors without a line
// (the caller knows how many lines came before); an error of the reader is
// returned as it is (a truncated gzip stream must not look like the end of
// the file). After an error Next returns it again.
func (b *LineBlocks) Next() (data []byte, buf *[]byte, first bool, err error) {
	for b.err == nil && !b.eof {
		first = b.first
		b.first = false
		buf, n, err := b.read(first)
		if err != nil {
			b.err, b.carry = err, nil
			break
		}
		data := (*buf)[:n]
		if first {
			data = trimBOM(data)
		}
		b.carry = b.carry[:0]
		if !b.eof {
			cut := bytes.LastIndexByte(data, '\n') + 1
			b.carry = append(b.carry, data[cut:]...)
			data = data[:cut]
		}
		if len(data) == 0 {
			RecycleBlock(buf)
			continue
		}
		return data, buf, first, nil
	}
	if b.err != nil {
		return nil, nil, false, b.err
	}
	return nil, nil, false, io.EOF
}

// read fills a buffer with the carried start of a line and what follows,
// until it holds a line end or the stream ends, and returns it and the
// number of bytes it holds.
func (b *LineBlocks) read(first bool) (*[]byte, int, error) {
	bufp := getBlock(max(b.size, 2*len(b.carry)))
	buf := *bufp
	n := copy(buf, b.carry)
	var err error
	tooLong := false
	for {
		n, err = fill(b.src, buf, n)
		if err == io.EOF {
			b.eof, err = true, nil
		}
		if b.eof || err != nil || bytes.IndexByte(buf[len(b.carry):n], '\n') >= 0 {
			break
		}
		if len(buf) >= MaxLineBytes {
			tooLong = true
			err = &InputError{File: b.file, Err: fmt.Errorf("line longer than %d bytes", MaxLineBytes)}
			break
		}
		grown := make([]byte, 2*len(buf))
		copy(grown, buf[:n])
		buf, bufp = grown, &grown
	}
	// The first block now holds the first line whole (or the whole file,
	// or MaxLineBytes of it), whatever the block size, so the verdict on
	// its line ends does not depend on where blocks end.
	if first && crOnly(buf[:min(n, MaxLineBytes)]) && (err == nil || tooLong) {
		// The whole file would read as one line.
		err = &InputError{File: b.file, Err: fmt.Errorf("%w: line ends are CR only (classic Mac); convert to LF", ErrLineEnds)}
	}
	return bufp, n, err
}

// crOnly reports whether the start of a file b has lines ended by a lone
// CR (classic Mac OS line ends): a CR before its last byte, and no LF at
// all. A CR in a file that has LFs is data, or part of a CR LF.
func crOnly(b []byte) bool {
	cr := bytes.IndexByte(b, '\r')
	return cr >= 0 && cr+1 < len(b) && bytes.IndexByte(b, '\n') < 0
}

// fill reads from src into buf[n:] until buf is full, the input ends
// (io.EOF) or reading fails. Unlike io.ReadFull it passes the reader's own
// errors through, so a truncated gzip stream (io.ErrUnexpectedEOF from the
// decompressor) is not mistaken for the end of the file.
func fill(src io.Reader, buf []byte, n int) (int, error) {
	for n < len(buf) {
		m, err := src.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}
