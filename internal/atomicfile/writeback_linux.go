package atomicfile

import (
	"os"
	"syscall"
)

// startWriteback starts the writeback of n bytes of f at off, without
// waiting for it. Errors are ignored: the sync in Commit reports them.
func startWriteback(f *os.File, off, n int64) {
	_ = syscall.SyncFileRange(int(f.Fd()), off, n, 0x2) // SYNC_FILE_RANGE_WRITE
}
