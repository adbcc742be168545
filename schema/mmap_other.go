//go:build !linux

package schema

import (
	"io"
	"os"
)

// mapping is a read-only memory map of a file; this platform reads files
// instead.
type mapping []byte

func mapFile(*os.File, int64) (mapping, error) { return nil, nil }

func (m mapping) unmap() error { return nil }

func (m mapping) drop([]byte) {}

func (m mapping) dropPages([]byte) {}

func (m mapping) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off >= int64(len(m)) {
		return 0, io.EOF
	}
	n := copy(p, m[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
