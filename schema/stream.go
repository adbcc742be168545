package schema

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
)

// OpenStream opens a file for reading as a stream of bytes, decompressing
// it when it is gzip (by its leading bytes, whatever its name): for the
// line files other packages read (judgments, corpora). A broken gzip
// stream reads as a *GzipError naming the offset, wrapped in an
// *InputError naming the file. The caller closes the stream.
func OpenStream(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(2)
	if !bytes.Equal(head, magicGzip) {
		return readCloser{br, f}, nil
	}
	zr, err := newGzipReader(br)
	if err != nil {
		f.Close()
		return nil, &InputError{File: path, Err: err}
	}
	return readCloser{gzipInput{zr, path}, multiCloser{zr, f}}, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

type multiCloser []io.Closer

func (m multiCloser) Close() error {
	var first error
	for _, c := range m {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// gzipInput names the file in a gzip stream's errors.
type gzipInput struct {
	zr   *gzipReader
	file string
}

func (g gzipInput) Read(p []byte) (int, error) {
	n, err := g.zr.Read(p)
	if err != nil && err != io.EOF {
		err = &InputError{File: g.file, Err: err}
	}
	return n, err
}
