package schema

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/memory"
)

func ipcBytes(t *testing.T, f Format) []byte {
	t.Helper()
	sb := NewStrings(2, 8)
	sb.Append("q1")
	sb.Append("q2")
	db := NewStrings(2, 8)
	db.Append("d1")
	db.Append("d2")
	rec := NewRecord(GoldLong(), []arrow.Array{sb.Array(), db.Array(), Int32Array([]int32{1, 2}, nil)}, 2)
	defer rec.Release()
	var b bytes.Buffer
	w, err := NewRecordWriter(&b, f, GoldLong())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestIPCCheckAcceptsValidFiles(t *testing.T) {
	s := ipcBytes(t, FormatArrowStream)
	if err := CheckIPCStream(bytes.NewReader(s), int64(len(s))); err != nil {
		t.Fatalf("valid stream: %v", err)
	}
	f := ipcBytes(t, FormatArrow)
	if err := CheckIPCFile(bytes.NewReader(f), int64(len(f))); err != nil {
		t.Fatalf("valid file: %v", err)
	}
}

func TestIPCCheckRejectsLyingLengths(t *testing.T) {
	s := ipcBytes(t, FormatArrowStream)
	// A message length far beyond the data.
	bad := append([]byte(nil), s...)
	bad[4], bad[5], bad[6], bad[7] = 0xff, 0xff, 0xff, 0x7f
	if err := CheckIPCStream(bytes.NewReader(bad), int64(len(bad))); !errors.Is(err, ErrIPCFraming) {
		t.Fatalf("huge message length: %v", err)
	}
	// Every truncation is caught without reading past the end.
	for n := 1; n < len(s)-8; n += 7 {
		if err := CheckIPCStream(bytes.NewReader(s[:n]), int64(n)); err == nil {
			t.Fatalf("stream cut at %d accepted", n)
		}
	}
	f := ipcBytes(t, FormatArrow)
	for n := 0; n < len(f)-1; n += 13 {
		if err := CheckIPCFile(bytes.NewReader(f[:n]), int64(n)); err == nil {
			t.Fatalf("file cut at %d accepted", n)
		}
	}
}

func TestLimitedAllocatorRefusesHugeAllocations(t *testing.T) {
	a := LimitedAllocator{Allocator: memory.NewGoAllocator(), Limit: 1 << 20}
	if len(a.Allocate(1024)) != 1024 {
		t.Fatal("small allocation")
	}
	err := protect(func() error { a.Allocate(1 << 40); return nil })
	if err == nil {
		t.Fatal("a terabyte allocation was attempted")
	}
}

// TestHostileArrowFileIsAnError writes a file whose schema claims billions
// of fields: reading it must be an error, not an out-of-memory crash.
func TestHostileArrowFileIsAnError(t *testing.T) {
	s := ipcBytes(t, FormatArrowStream)
	// Find the schema's fields vector length (2 for our 3-column schema
	// is not unique; patch every little-endian 3 in the first message).
	bad := append([]byte(nil), s...)
	patched := false
	for i := 8; i+4 < 8+int(int32(bad[4])|int32(bad[5])<<8); i++ {
		if bad[i] == 3 && bad[i+1] == 0 && bad[i+2] == 0 && bad[i+3] == 0 {
			bad[i], bad[i+1], bad[i+2], bad[i+3] = 0, 0, 0, 0x40
			patched = true
		}
	}
	if !patched {
		t.Skip("no field count found to patch")
	}
	p := filepath.Join(t.TempDir(), "hostile.arrows")
	if err := os.WriteFile(p, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(t.Context(), p, RoleGold, Options{Format: FormatArrowStream})
	if err == nil {
		defer r.Close()
		for {
			b, err := r.Next(t.Context())
			if err != nil {
				break
			}
			b.Release()
		}
	}
}
