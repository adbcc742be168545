//go:build !linux

package atomicfile

import "os"

// startWriteback does nothing: only Linux has sync_file_range.
func startWriteback(f *os.File, off, n int64) {}
