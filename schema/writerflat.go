package schema

import (
	"github.com/apache/arrow/go/v16/arrow"
)

// isFlatSchema reports whether every field of s is a utf8, int32, int64,
// float32 or float64 column.
func isFlatSchema(s *arrow.Schema) bool {
	for _, f := range s.Fields() {
		switch f.Type.ID() {
		case arrow.STRING, arrow.INT32, arrow.INT64, arrow.FLOAT32, arrow.FLOAT64:
		default:
			return false
		}
	}
	return s.NumFields() > 0
}

// flushFlat writes the open row group through p.flat.
func (p *parquetWriter) flushFlat() error {
	cols := make([][]arrow.Array, p.schema.NumFields())
	for c := range cols {
		for _, r := range p.pending {
			cols[c] = append(cols[c], r.Column(c))
		}
	}
	return p.flat.writeGroup(cols, p.rows)
}
