//go:build unix

package schema

import (
	"os"
	"syscall"
)

// mapping is a read-only memory map of a file (nil: none).
type mapping []byte

// mapFile maps the first size bytes of f read-only. It returns nil for an
// empty file or a file larger than the address space allows.
func mapFile(f *os.File, size int64) (mapping, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	return mapping(b), nil
}

func (m mapping) unmap() error {
	if m == nil {
		return nil
	}
	return syscall.Munmap(m)
}
