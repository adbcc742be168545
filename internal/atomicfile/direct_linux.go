package atomicfile

import (
	"errors"
	"os"
	"syscall"
	"unsafe"
)

// directAlign is the alignment O_DIRECT asks of a write's memory, offset
// and length. The device's logical block size is usually 512 bytes;
// 4096 serves every block size up to the page size.
const directAlign = 4096

// directBlock is the size of directWriter's own buffer, in which writes
// that are not aligned are gathered.
const directBlock = 4 << 20

// directWriter writes a file through a second descriptor opened with
// O_DIRECT, past the page cache. Writes whose memory is aligned go to
// disk straight from it, the multiple of directAlign that they hold;
// the rest is gathered in an aligned buffer first. The last, partial
// block is written padded with zeros and the file then cut to its
// length. If the file system refuses a direct write (EINVAL: it took
// the flag at open but not the write), the file is written through the
// page cache from there on.
//
// A direct write blocks its goroutine for as long as the device takes;
// a writer that must not wait for the disk writes from a goroutine of
// its own (as the Parquet writer does).
type directWriter struct {
	tmp    *os.File // the temporary file
	direct *os.File // tmp opened O_DIRECT; nil once refused
	buf    []byte   // aligned, capacity directBlock
	off    int64    // bytes in the file (the padding of the last block excluded)
	padded bool     // the last write was padded past off
}

// openDirect opens tmp a second time for direct writes, or returns nil
// where the file system does not take them (tmpfs, for one).
func openDirect(tmp *os.File) sink {
	f, err := os.OpenFile(tmp.Name(), os.O_WRONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return nil
	}
	return &directWriter{tmp: tmp, direct: f, buf: AlignedBuffer(directBlock)}
}

// AlignedBuffer returns an empty slice of capacity n whose memory starts
// on a 4096-byte boundary: whole blocks written from it to a file made by
// CreateUncached are written without a copy.
func AlignedBuffer(n int) []byte {
	b := make([]byte, n+directAlign)
	skip := int(-uintptr(unsafe.Pointer(&b[0])) & (directAlign - 1))
	return b[skip : skip : skip+n]
}

func aligned(p []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(p)))&(directAlign-1) == 0
}

func (d *directWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if len(d.buf) == 0 && len(p) >= directAlign && aligned(p) {
			k := len(p) &^ (directAlign - 1)
			if err := d.write(p[:k], k); err != nil {
				return n - len(p), err
			}
			p = p[k:]
			continue
		}
		k := copy(d.buf[len(d.buf):cap(d.buf)], p)
		d.buf = d.buf[:len(d.buf)+k]
		p = p[k:]
		if len(d.buf) == cap(d.buf) {
			if err := d.write(d.buf, len(d.buf)); err != nil {
				return n - len(p), err
			}
			d.buf = d.buf[:0]
		}
	}
	return n, nil
}

// write writes b at the file's end, of which the first n bytes are data
// (the rest is padding).
func (d *directWriter) write(b []byte, n int) error {
	if d.direct != nil {
		_, err := d.direct.WriteAt(b, d.off)
		if err == nil {
			d.off += int64(n)
			d.padded = len(b) > n
			return nil
		}
		if !errors.Is(err, syscall.EINVAL) {
			return err
		}
		d.close() // refused: write through the page cache from here
	}
	_, err := d.tmp.WriteAt(b[:n], d.off)
	d.off += int64(n)
	return err
}

func (d *directWriter) finish() error {
	if n := len(d.buf); n > 0 {
		padded := d.buf[:(n+directAlign-1)&^(directAlign-1)]
		clear(padded[n:])
		if err := d.write(padded, n); err != nil {
			return err
		}
		d.buf = d.buf[:0]
	}
	if d.padded {
		return d.tmp.Truncate(d.off)
	}
	return nil
}

func (d *directWriter) close() {
	if d.direct != nil {
		d.direct.Close()
		d.direct = nil
	}
}
