package schema

import (
	"io"
	"os"
	"syscall"
	"unsafe"
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

// drop drops the whole pages of b, a part of m, from the process (they
// stay in the page cache), when there are enough of them to matter.
func (m mapping) drop(b []byte) { m.dropWhole(b, 16) }

// dropPages drops every whole page of b, a part of m, from the process
// (they stay in the page cache), however few. Unlike drop, it is for
// parts read once and never again, whose pages need not add up to much
// for their sum to matter.
func (m mapping) dropPages(b []byte) { m.dropWhole(b, 1) }

// dropWhole drops the whole pages of b, a part of m, when there are at
// least minPages of them.
func (m mapping) dropWhole(b []byte, minPages uintptr) {
	if len(b) == 0 {
		return
	}
	page := uintptr(os.Getpagesize())
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b))) - uintptr(unsafe.Pointer(unsafe.SliceData(m)))
	lo := (start + page - 1) / page * page
	hi := (start + uintptr(len(b))) / page * page
	if hi > lo && hi-lo >= minPages*page {
		_ = syscall.Madvise(m[lo:hi], syscall.MADV_DONTNEED) // advice: nothing to do when refused
	}
}

func (m mapping) unmap() error {
	if m == nil {
		return nil
	}
	return syscall.Munmap(m)
}

// ReadAt copies from the mapping, then drops the whole pages it copied
// from the process (they stay in the page cache): the Arrow reader copies
// every buffer it reads, so a page is needed once, and a mapped file must
// not count in the process's resident memory as it is read.
func (m mapping) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, os.ErrInvalid
	}
	if off >= int64(len(m)) {
		return 0, io.EOF
	}
	n := copy(p, m[off:])
	m.drop(m[off : off+int64(n)])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
