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

// flushFlat hands the open row group to p.flat, which releases its
// records once it is written.
func (p *parquetWriter) flushFlat() error {
	g := flatGroup{cols: make([][]arrow.Array, p.schema.NumFields()), rows: p.rows, recs: p.pending}
	for c := range g.cols {
		for _, r := range p.pending {
			g.cols[c] = append(g.cols[c], r.Column(c))
		}
	}
	p.pending, p.rows = nil, 0
	return p.flat.submit(g)
}
