package schema

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
)

// GzipError says how a gzip stream is broken. Its text tells apart the
// two failures people meet: a file cut short, and data appended after the
// last gzip member (a log line, a second copy that is not gzip, tar
// padding). It wraps ErrCorrupt.
type GzipError struct {
	// Offset is the byte offset in the compressed file where the stream
	// ends early or where the trailing data starts.
	Offset int64
	// Trailing is set for data after the stream, clear for a stream that
	// ends early.
	Trailing bool
}

func (e *GzipError) Error() string {
	if e.Trailing {
		return fmt.Sprintf("%v: trailing data after the gzip stream, at byte %d: something was appended to the file (cut it off, or recompress)", ErrCorrupt, e.Offset)
	}
	return fmt.Sprintf("%v: the gzip stream ends early, after %d bytes: the file is truncated (an interrupted download or copy?)", ErrCorrupt, e.Offset)
}

// Unwrap makes a GzipError match ErrCorrupt.
func (e *GzipError) Unwrap() error { return ErrCorrupt }

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// gzipReader decompresses every member of a gzip file, one after the
// other as gzip does, and fails with a *GzipError when the file ends
// inside a member or holds bytes after the last one that do not start
// another.
type gzipReader struct {
	count *countingReader
	br    *bufio.Reader // reads whole members: gzip reads byte by byte from an io.ByteReader
	zr    *gzip.Reader
	err   error // sticky: io.EOF or the failure
}

// newGzipReader starts reading the gzip file r. A bad first header is a
// *GzipError (ends early) or an error wrapping ErrCorrupt.
func newGzipReader(r io.Reader) (*gzipReader, error) {
	g := &gzipReader{count: &countingReader{r: r}}
	g.br = bufio.NewReader(g.count)
	zr, err := gzip.NewReader(g.br)
	if err != nil {
		return nil, g.fail(err)
	}
	zr.Multistream(false)
	g.zr = zr
	return g, nil
}

// pos is the offset in the compressed file of the next byte to decode.
func (g *gzipReader) pos() int64 { return g.count.n - int64(g.br.Buffered()) }

// fail turns a decompressor error into the error to report.
func (g *gzipReader) fail(err error) error {
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &GzipError{Offset: g.pos()}
	case errors.Is(err, gzip.ErrHeader):
		return fmt.Errorf("%w: gzip header: %v", ErrCorrupt, err)
	case errors.Is(err, gzip.ErrChecksum):
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return err
}

func (g *gzipReader) Read(p []byte) (int, error) {
	for {
		if g.err != nil {
			return 0, g.err
		}
		n, err := g.zr.Read(p)
		switch {
		case err == io.EOF:
			g.err = g.next()
		case err != nil:
			g.err = g.fail(err)
		}
		if n > 0 || g.err == nil && err == nil {
			return n, nil
		}
	}
}

// next starts the member after the one that ended, if the file has one:
// nil when it does, io.EOF at the end of the file, or a *GzipError for
// data that does not start a member.
func (g *gzipReader) next() error {
	head, _ := g.br.Peek(len(magicGzip))
	switch {
	case len(head) == 0:
		return io.EOF
	case !bytes.Equal(head, magicGzip):
		return &GzipError{Offset: g.pos(), Trailing: true}
	}
	if err := g.zr.Reset(g.br); err != nil {
		return g.fail(err)
	}
	g.zr.Multistream(false)
	return nil
}

// Close releases the decompressor.
func (g *gzipReader) Close() error { return g.zr.Close() }
