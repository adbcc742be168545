package atomicfile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestWriteLarge writes a file of several writeback windows in uneven
// pieces and reads it back.
func TestWriteLarge(t *testing.T) {
	p := filepath.Join(t.TempDir(), "out")
	want := make([]byte, 5*writebackWindow+12345)
	for i := range want {
		want[i] = byte(i * 7 / 3)
	}
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	for rest := want; len(rest) > 0; {
		n := min(len(rest), 3<<20+17)
		if _, err := f.Write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes back, not the %d written", len(got), len(want))
	}
}
