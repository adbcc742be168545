package schema

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/apache/arrow/go/v16/arrow/ipc"
	"github.com/apache/arrow/go/v16/arrow/memory"
)

// viewSchema has a column of every layout viewRecord lays out, nulls
// included.
var viewSchema = arrow.NewSchema([]arrow.Field{
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	{Name: "b", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "fsb", Type: &arrow.FixedSizeBinaryType{ByteWidth: 3}, Nullable: true},
	{Name: "l", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "ll", Type: arrow.LargeListOf(arrow.PrimitiveTypes.Float64), Nullable: true},
	{Name: "st", Type: arrow.StructOf(
		arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		arrow.Field{Name: "y", Type: arrow.BinaryTypes.String, Nullable: true}), Nullable: true},
	{Name: "m", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), Nullable: true},
	{Name: "ree", Type: arrow.RunEndEncodedOf(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String), Nullable: true},
}, nil)

var viewBatches = []string{
	`[{"s": "a", "ls": "bb", "b": "AQI=", "i8": 1, "i32": 7, "f64": 1.5, "ok": true, "fsb": "AQID",
	   "l": ["x", "yz"], "ll": [1, 2.5], "st": {"x": 3, "y": "q"}, "m": [{"key": "k", "value": "v"}], "ree": "q1"},
	  {"s": null, "ls": null, "b": null, "i8": null, "i32": null, "f64": null, "ok": null, "fsb": null,
	   "l": null, "ll": null, "st": null, "m": null, "ree": "q1"},
	  {"s": "", "ls": "", "b": "", "i8": -3, "i32": 0, "f64": -0.25, "ok": false, "fsb": "BAUG",
	   "l": [], "ll": [], "st": {"x": null, "y": null}, "m": [], "ree": null}]`,
	`[{"s": "ünï", "ls": "c", "b": "", "i8": 2, "i32": 2, "f64": 2, "ok": true, "fsb": "BwgJ",
	   "l": ["a", null], "ll": [3], "st": {"x": 1, "y": "r"}, "m": [{"key": "a", "value": null}], "ree": "q2"}]`,
	`[]`,
}

// mappedFile writes recs as an Arrow IPC file with the writer options and
// maps it.
func mappedFile(t *testing.T, recs []arrow.Record, opts ...ipc.Option) (*mappedBatches, *ipc.FileReader) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "v.arrow")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ipc.NewFileWriter(f, append(opts, ipc.WithSchema(viewSchema))...)
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, recs...)
	f.Close()
	if f, err = os.Open(p); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, _ := f.Stat()
	mm, err := mapFile(f, st.Size())
	if err != nil || mm == nil {
		t.Skipf("no memory mapping here (%v)", err)
	}
	r, err := ipc.NewFileReader(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	b := newMappedBatches(mm, f, r.Schema())
	if b == nil || len(b.blocks) != len(recs) {
		t.Fatalf("mapped batches: %v", b)
	}
	return b, r
}

// bodyOf returns batch i's body, copied from the mapping.
func bodyOf(b *mappedBatches, i int) func() ([]byte, error) {
	return func() ([]byte, error) { return bytes.Clone(b.blocks[i].body), nil }
}

// TestViewRecord checks that a batch viewed in place equals what the
// Arrow reader decodes, for every layout, and that its buffers are views
// of the body read.
func TestViewRecord(t *testing.T) {
	recs := recordsFromJSON(t, memory.DefaultAllocator, viewSchema, viewBatches...)
	defer release(recs)
	b, r := mappedFile(t, recs)
	for i := range recs {
		var body []byte
		got, err := viewRecord(b.arrowSchema, b.blocks[i].meta, func() ([]byte, error) {
			body = bytes.Clone(b.blocks[i].body)
			return body, nil
		}, nil)
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		want, err := r.RecordAt(i)
		if err != nil {
			t.Fatal(err)
		}
		if !array.RecordEqual(got, want) {
			t.Errorf("batch %d: viewed\n%v\nArrow reader\n%v", i, got, want)
		}
		for c, col := range got.Columns() {
			for k, buf := range col.Data().Buffers() {
				if buf != nil && !within(buf.Bytes(), body) {
					t.Errorf("batch %d column %d buffer %d is not a view of the body", i, c, k)
				}
			}
		}
		got.Release()
		want.Release()
	}
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	rec, err := b.record(0, mem)
	if err != nil {
		t.Fatal(err)
	}
	if !array.RecordEqual(rec, recs[0]) {
		t.Errorf("record 0:\n%v\nwant\n%v", rec, recs[0])
	}
	rec.Release()
	mem.AssertSize(t, 0) // the Arrow reader's allocator was not used
	if b.viewed.Load() {
		t.Error("a small file's records viewed the mapping")
	}
}

// TestViewMapping checks that a large file's records are views of the
// mapping, that the mapping is then kept, and that releasing a record's
// last buffer releases its pages once.
func TestViewMapping(t *testing.T) {
	defer func(n int) { viewMappedMinSize = n }(viewMappedMinSize)
	viewMappedMinSize = 0
	recs := recordsFromJSON(t, memory.DefaultAllocator, viewSchema, viewBatches...)
	defer release(recs)
	b, _ := mappedFile(t, recs)
	for i := range recs {
		rel := &pageRelease{mm: b.mm, msg: b.blocks[i].body}
		got, err := viewRecord(b.arrowSchema, b.blocks[i].meta, func() ([]byte, error) { return b.blocks[i].body, nil }, rel)
		if err != nil {
			t.Fatal(err)
		}
		if !array.RecordEqual(got, recs[i]) {
			t.Errorf("batch %d: viewed\n%v\nwant\n%v", i, got, recs[i])
		}
		for c, col := range got.Columns() {
			for k, buf := range col.Data().Buffers() {
				if buf != nil && !within(buf.Bytes(), b.mm) {
					t.Errorf("batch %d column %d buffer %d is not a view of the mapping", i, c, k)
				}
			}
		}
		if got.NumRows() == 0 {
			got.Release()
			continue
		}
		if rel.refs.Load() == 0 {
			t.Fatalf("batch %d: no buffer counted", i)
		}
		sliced := array.NewSlice(got.Column(0), 0, 1) // outlives the record
		got.Release()
		if rel.refs.Load() == 0 {
			t.Fatalf("batch %d: pages released while a slice holds a buffer", i)
		}
		sliced.Release()
		if n := rel.refs.Load(); n != 0 {
			t.Fatalf("batch %d: %d buffers still counted after every release", i, n)
		}
	}
	rec, err := b.record(0, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if !b.viewed.Load() {
		t.Error("the mapping was not marked as viewed")
	}
}

// within tells whether b lies inside m.
func within(b, m []byte) bool {
	if len(b) == 0 || len(m) == 0 {
		return len(b) == 0
	}
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p+uintptr(len(b)) <= lo+uintptr(len(m))
}

// TestViewRecordLeftToArrow checks that compressed batches are left to
// the Arrow reader, with the same records, and that a failed body read is
// an error.
func TestViewRecordLeftToArrow(t *testing.T) {
	recs := recordsFromJSON(t, memory.DefaultAllocator, viewSchema, viewBatches...)
	defer release(recs)
	b, _ := mappedFile(t, recs, ipc.WithZstd())
	for i := range recs {
		if _, err := viewRecord(b.arrowSchema, b.blocks[i].meta, bodyOf(b, i), nil); err != errNoView {
			t.Fatalf("batch %d: viewRecord = %v, want errNoView", i, err)
		}
		got, err := b.record(i, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		if !array.RecordEqual(got, recs[i]) {
			t.Errorf("batch %d: read\n%v\nwant\n%v", i, got, recs[i])
		}
		got.Release()
	}
	plain, _ := mappedFile(t, recs)
	boom := errors.New("boom")
	if _, err := viewRecord(plain.arrowSchema, plain.blocks[0].meta, func() ([]byte, error) { return nil, boom }, nil); err != boom {
		t.Fatalf("viewRecord with a failing read = %v, want %v", err, boom)
	}
	// A buffer outside the body is left to the Arrow reader (which fails).
	if _, err := viewRecord(plain.arrowSchema, plain.blocks[0].meta, func() ([]byte, error) { return make([]byte, 8), nil }, nil); err != errNoView {
		t.Fatalf("viewRecord with a short body = %v, want errNoView", err)
	}
}
