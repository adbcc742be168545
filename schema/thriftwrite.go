package schema

import "encoding/binary"

// Thrift compact protocol type codes (the low nibble of a field header).
const (
	thriftTrue   = 1
	thriftFalse  = 2
	thriftByte   = 3
	thriftI32    = 5
	thriftI64    = 6
	thriftBinary = 8
	thriftList   = 9
	thriftStruct = 12
)

// thriftOut appends values in the Thrift compact protocol to b, the
// encoding of Parquet's page headers and file footer: a field is a header
// byte holding the delta from the previous field id (high nibble) and the
// type (low nibble), or the type alone and the id as a zigzag varint when
// the delta is not 1..15; integers are zigzag varints, binaries a varint
// length and the bytes, a struct ends with a 0 byte. The reader of the
// same protocol is compact in parquetchunk.go.
type thriftOut struct {
	b     []byte
	last  int16   // id of the previous field of the open struct
	outer []int16 // last of the enclosing structs
}

func (t *thriftOut) field(id int16, typ byte) {
	if d := id - t.last; d > 0 && d <= 15 {
		t.b = append(t.b, byte(d)<<4|typ)
	} else {
		t.b = append(t.b, typ)
		t.b = binary.AppendVarint(t.b, int64(id))
	}
	t.last = id
}

func (t *thriftOut) i32(id int16, v int32) {
	t.field(id, thriftI32)
	t.b = binary.AppendVarint(t.b, int64(v))
}

func (t *thriftOut) i64(id int16, v int64) {
	t.field(id, thriftI64)
	t.b = binary.AppendVarint(t.b, v)
}

func (t *thriftOut) byte1(id int16, v int8) {
	t.field(id, thriftByte)
	t.b = append(t.b, byte(v))
}

func (t *thriftOut) boolean(id int16, v bool) {
	if v {
		t.field(id, thriftTrue)
	} else {
		t.field(id, thriftFalse)
	}
}

func (t *thriftOut) str(id int16, s string) {
	t.field(id, thriftBinary)
	t.strValue(s)
}

func (t *thriftOut) strValue(s string) {
	t.b = binary.AppendUvarint(t.b, uint64(len(s)))
	t.b = append(t.b, s...)
}

// begin opens a struct: the value of field id, or an element of a list
// when id is 0.
func (t *thriftOut) begin(id int16) {
	if id != 0 {
		t.field(id, thriftStruct)
	}
	t.outer = append(t.outer, t.last)
	t.last = 0
}

// end closes the struct begin opened.
func (t *thriftOut) end() {
	t.b = append(t.b, 0)
	t.last = t.outer[len(t.outer)-1]
	t.outer = t.outer[:len(t.outer)-1]
}

// list starts field id, a list of n elements of type elem, which the
// caller appends next (structs through begin(0) and end).
func (t *thriftOut) list(id int16, elem byte, n int) {
	t.field(id, thriftList)
	if n < 15 {
		t.b = append(t.b, byte(n)<<4|elem)
		return
	}
	t.b = append(t.b, 0xf0|elem)
	t.b = binary.AppendUvarint(t.b, uint64(n))
}

// i32List writes field id, a list of i32.
func (t *thriftOut) i32List(id int16, vs []int32) {
	t.list(id, thriftI32, len(vs))
	for _, v := range vs {
		t.b = binary.AppendVarint(t.b, int64(v))
	}
}
