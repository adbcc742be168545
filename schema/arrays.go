package schema

import (
	"sync"
	"unsafe"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
	"github.com/apache/arrow/go/v16/arrow/bitutil"
	"github.com/apache/arrow/go/v16/arrow/memory"
)

// The helpers below wrap Go slices as Arrow arrays without copying. The
// memory belongs to the Go heap; Release is harmless and the garbage
// collector frees it.

func bytesOf[T any](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var zero T
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
}

// validityBitmap returns an Arrow validity bitmap for valid, and the null
// count. It returns nil when every value is valid.
func validityBitmap(valid []bool) (*memory.Buffer, int) {
	nulls := 0
	for _, v := range valid {
		if !v {
			nulls++
		}
	}
	if nulls == 0 {
		return nil, 0
	}
	bm := make([]byte, bitutil.BytesForBits(int64(len(valid))))
	for i, v := range valid {
		if v {
			bitutil.SetBit(bm, i)
		}
	}
	return memory.NewBufferBytes(bm), nulls
}

// StringArray wraps offsets (len n+1) and data as a utf8 array.
func StringArray(offsets []int32, data []byte) *array.String {
	n := len(offsets) - 1
	d := array.NewData(arrow.BinaryTypes.String, n,
		[]*memory.Buffer{nil, memory.NewBufferBytes(bytesOf(offsets)), memory.NewBufferBytes(data)}, nil, 0, 0)
	defer d.Release()
	return array.NewStringData(d)
}

// NullableStringArray is StringArray with a validity mask (nil: all valid).
func NullableStringArray(offsets []int32, data []byte, valid []bool) *array.String {
	n := len(offsets) - 1
	bm, nulls := validityBitmap(valid)
	d := array.NewData(arrow.BinaryTypes.String, n,
		[]*memory.Buffer{bm, memory.NewBufferBytes(bytesOf(offsets)), memory.NewBufferBytes(data)}, nil, nulls, 0)
	defer d.Release()
	return array.NewStringData(d)
}

// Float64Array wraps v.
func Float64Array(v []float64) *array.Float64 {
	d := array.NewData(arrow.PrimitiveTypes.Float64, len(v),
		[]*memory.Buffer{nil, memory.NewBufferBytes(bytesOf(v))}, nil, 0, 0)
	defer d.Release()
	return array.NewFloat64Data(d)
}

// Int64Array wraps v.
func Int64Array(v []int64) *array.Int64 {
	d := array.NewData(arrow.PrimitiveTypes.Int64, len(v),
		[]*memory.Buffer{nil, memory.NewBufferBytes(bytesOf(v))}, nil, 0, 0)
	defer d.Release()
	return array.NewInt64Data(d)
}

// Int32Array wraps v with a validity mask (nil: all valid).
func Int32Array(v []int32, valid []bool) *array.Int32 {
	bm, nulls := validityBitmap(valid)
	d := array.NewData(arrow.PrimitiveTypes.Int32, len(v),
		[]*memory.Buffer{bm, memory.NewBufferBytes(bytesOf(v))}, nil, nulls, 0)
	defer d.Release()
	return array.NewInt32Data(d)
}

// Uint32Array wraps v.
func Uint32Array(v []uint32) *array.Uint32 {
	d := array.NewData(arrow.PrimitiveTypes.Uint32, len(v),
		[]*memory.Buffer{nil, memory.NewBufferBytes(bytesOf(v))}, nil, 0, 0)
	defer d.Release()
	return array.NewUint32Data(d)
}

// ListArray wraps offsets (len n+1) around values as list<values' type>,
// with a validity mask (nil: all valid). It takes a reference to values.
func ListArray(offsets []int32, values arrow.Array, valid []bool) *array.List {
	n := len(offsets) - 1
	bm, nulls := validityBitmap(valid)
	d := array.NewData(arrow.ListOf(values.DataType()), n,
		[]*memory.Buffer{bm, memory.NewBufferBytes(bytesOf(offsets))},
		[]arrow.ArrayData{values.Data()}, nulls, 0)
	defer d.Release()
	return array.NewListData(d)
}

// MapArray wraps offsets (len n+1) around keys and items as
// map<utf8,utf8>, with a validity mask (nil: all valid).
func MapArray(offsets []int32, keys, items *array.String, valid []bool) *array.Map {
	n := len(offsets) - 1
	bm, nulls := validityBitmap(valid)
	entries := array.NewData(TagsType.Elem(), keys.Len(), []*memory.Buffer{nil},
		[]arrow.ArrayData{keys.Data(), items.Data()}, 0, 0)
	defer entries.Release()
	d := array.NewData(TagsType, n,
		[]*memory.Buffer{bm, memory.NewBufferBytes(bytesOf(offsets))},
		[]arrow.ArrayData{entries}, nulls, 0)
	defer d.Release()
	return array.NewMapData(d)
}

// NewRecord assembles a record and drops the caller's references to the
// columns (the record holds its own).
func NewRecord(s *arrow.Schema, cols []arrow.Array, rows int) arrow.Record {
	rec := array.NewRecord(s, cols, int64(rows))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// Strings accumulates strings as Arrow offsets and data. The zero value is
// not ready: use NewStrings.
type Strings struct {
	Offsets []int32
	Data    []byte
}

// NewStrings returns an empty Strings with room for n strings of total size
// bytes.
func NewStrings(n, bytes int) Strings {
	return Strings{Offsets: make([]int32, 1, n+1), Data: make([]byte, 0, bytes)}
}

// AppendBytes appends s.
func (b *Strings) AppendBytes(s []byte) {
	b.Data = append(b.Data, s...)
	b.Offsets = append(b.Offsets, int32(len(b.Data)))
}

// Append appends s.
func (b *Strings) Append(s string) {
	b.Data = append(b.Data, s...)
	b.Offsets = append(b.Offsets, int32(len(b.Data)))
}

// Len returns the number of strings.
func (b *Strings) Len() int { return len(b.Offsets) - 1 }

// Value returns string i (a view of b's memory).
func (b *Strings) Value(i int) string {
	s := b.Data[b.Offsets[i]:b.Offsets[i+1]]
	return unsafe.String(unsafe.SliceData(s), len(s))
}

// Reset empties b, keeping its memory.
func (b *Strings) Reset() {
	b.Offsets = b.Offsets[:1]
	b.Data = b.Data[:0]
}

// Array wraps the strings as a utf8 array without copying; b must not be
// appended to while the array is in use.
func (b *Strings) Array() *array.String { return StringArray(b.Offsets, b.Data) }

// maxSharedNulls bounds the zeroed memory kept for all-null int32 arrays
// (NullInt32Array): 64 MiB, 16 M rows; longer arrays get memory of their
// own.
const maxSharedNulls = 64 << 20

// sharedZeros is the zeroed memory behind the all-null int32 arrays of at
// most maxSharedNulls bytes: their values and their validity bitmap, read
// and never written, so every such array shares it.
var sharedZeros struct {
	mu sync.Mutex
	b  []byte
}

// zeros returns n zero bytes that nobody writes.
func zeros(n int) []byte {
	if n > maxSharedNulls {
		return make([]byte, n)
	}
	sharedZeros.mu.Lock()
	defer sharedZeros.mu.Unlock()
	if len(sharedZeros.b) < n {
		sharedZeros.b = make([]byte, min(max(n, 2*len(sharedZeros.b)), maxSharedNulls))
	}
	return sharedZeros.b[:n]
}

// NullInt32Array returns an int32 array of n nulls (values 0). Its memory
// is shared and read-only: a run read without its ranks (Options.SkipRanks)
// gets one per batch without allocating it.
func NullInt32Array(n int) *array.Int32 {
	z := zeros(4 * n) // the bitmap's n/8 bytes fit too
	d := array.NewData(arrow.PrimitiveTypes.Int32, n,
		[]*memory.Buffer{memory.NewBufferBytes(z[:bitutil.BytesForBits(int64(n))]), memory.NewBufferBytes(z)}, nil, n, 0)
	defer d.Release()
	return array.NewInt32Data(d)
}
