//go:build !linux

package atomicfile

import "os"

// openDirect returns nil: direct writes are used on Linux only.
func openDirect(tmp *os.File) sink { return nil }

// AlignedBuffer returns an empty slice of capacity n.
func AlignedBuffer(n int) []byte { return make([]byte, 0, n) }
