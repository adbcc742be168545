package atomicfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// pattern returns n bytes that differ from their neighbours.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7 / 3)
	}
	return b
}

// writeInPieces writes want to f in pieces of the given sizes, cycled,
// and commits.
func writeInPieces(t *testing.T, f *File, want []byte, sizes ...int) {
	t.Helper()
	defer f.Abort()
	for i, rest := 0, want; len(rest) > 0; i++ {
		n := min(len(rest), sizes[i%len(sizes)])
		if _, err := f.Write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
}

func readBack(t *testing.T, p string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes back, not the %d written", len(got), len(want))
	}
	if m, err := filepath.Glob(filepath.Join(filepath.Dir(p), ".*.tmp-*")); err != nil || len(m) > 0 {
		t.Fatalf("temporary files left: %v %v", m, err)
	}
}

// TestWriteLarge writes files of several writeback windows, and of
// sizes around the direct-write alignment, in uneven and in aligned
// pieces, buffered and uncached, and reads them back.
func TestWriteLarge(t *testing.T) {
	create := map[string]func(string) (*File, error){"buffered": Create, "uncached": CreateUncached}
	sizes := []int{0, 1, 4095, 4096, 4097, directBlock - 1, directBlock, 3*directBlock + 5, 5*writebackWindow + 12345}
	pieces := map[string][]int{"uneven": {3<<20 + 17, 1, 4096, 100000}, "blocks": {directBlock}, "small": {333}}
	for name, open := range create {
		for _, n := range sizes {
			for how, ps := range pieces {
				if n > 4*directBlock && how == "small" {
					continue
				}
				t.Run(fmt.Sprintf("%s/%d/%s", name, n, how), func(t *testing.T) {
					p := filepath.Join(t.TempDir(), "out")
					f, err := open(p)
					if err != nil {
						t.Fatal(err)
					}
					want := pattern(n)
					writeInPieces(t, f, want, ps...)
					readBack(t, p, want)
				})
			}
		}
	}
}

// createDirect creates an uncached file in a temporary directory and
// returns its path, the file and its direct writer; it skips the test
// where the file system takes no direct writes.
func createDirect(t *testing.T) (string, *File, *directWriter) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "out")
	f, err := CreateUncached(p)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := f.out.(*directWriter)
	if !ok {
		f.Abort()
		t.Skipf("the file system of %s takes no direct writes", p)
	}
	return p, f, d
}

// TestUncachedAlignedWrites checks that aligned pieces reach the file
// straight from the caller's memory, and the rest through the buffer.
func TestUncachedAlignedWrites(t *testing.T) {
	p, f, d := createDirect(t)
	defer f.Abort()
	src := AlignedBuffer(4 * directBlock)[:4*directBlock]
	copy(src, pattern(len(src)))
	if _, err := d.Write(src[:2*directBlock]); err != nil {
		t.Fatal(err)
	}
	if len(d.buf) != 0 || d.direct == nil || d.off != 2*directBlock {
		t.Fatalf("aligned write: %d bytes buffered, %d in the file, direct %v", len(d.buf), d.off, d.direct != nil)
	}
	if _, err := d.Write(src[2*directBlock : 2*directBlock+10]); err != nil {
		t.Fatal(err)
	}
	if len(d.buf) != 10 {
		t.Fatalf("short write: %d bytes buffered, want 10", len(d.buf))
	}
	if _, err := d.Write(src[2*directBlock+10:]); err != nil {
		t.Fatal(err)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	readBack(t, p, src)
}

// TestUncachedRefused checks the fall back to the page cache when a
// direct write is refused: a write from memory that is not aligned is
// refused with EINVAL, as a file system that took the flag at open but
// not the write would refuse it.
func TestUncachedRefused(t *testing.T) {
	p, f, d := createDirect(t)
	defer f.Abort()
	want := pattern(3*directBlock + 99)
	odd := make([]byte, directAlign+1)[1:] // not aligned in memory
	copy(odd, want)
	if err := d.write(odd, len(odd)); err != nil {
		t.Fatalf("refused write: %v", err)
	}
	if d.direct != nil {
		t.Fatal("the direct descriptor was kept after a refused write")
	}
	writeInPieces(t, f, want[len(odd):], 777, directBlock)
	readBack(t, p, want)
}

// TestAbortRemoves checks that an aborted file leaves nothing behind.
func TestAbortRemoves(t *testing.T) {
	for _, open := range []func(string) (*File, error){Create, CreateUncached} {
		dir := t.TempDir()
		f, err := open(filepath.Join(dir, "out"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(pattern(3*directBlock + 1)); err != nil {
			t.Fatal(err)
		}
		f.Abort()
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("aborted file left %d entries", len(ents))
		}
	}
}
