package schema

import (
	"bytes"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/array"
)

// queryRunsOf accumulates a query_id column as runs of one id: the
// run-end encoded form (QueryRunsType) a Parquet run's dictionary-encoded
// ids decode to without writing the id on every row.
type queryRunsOf struct {
	ends []int32
	vals Strings
	// bytes counts the bytes of the ids one a row, which may not exceed
	// limit, as the ids read one a row may not (see appendRepeated).
	bytes, limit int64
}

// add appends count rows of id v, extending the last run when it holds v.
func (q *queryRunsOf) add(v []byte, count int) {
	q.bytes += int64(count) * int64(len(v))
	if k := len(q.ends); k > 0 && bytes.Equal(q.vals.Data[q.vals.Offsets[k-1]:], v) {
		q.ends[k-1] += int32(count)
		return
	}
	end := int32(count)
	if k := len(q.ends); k > 0 {
		end += q.ends[k-1]
	}
	q.vals.AppendBytes(v)
	q.ends = append(q.ends, end)
}

func (q *queryRunsOf) array() *array.RunEndEncoded {
	re, va := Int32Array(q.ends, nil), q.vals.Array()
	defer re.Release()
	defer va.Release()
	rows := 0
	if len(q.ends) > 0 {
		rows = int(q.ends[len(q.ends)-1])
	}
	return array.NewRunEndEncodedArray(re, va, rows, 0)
}

// readQueryRuns reads the next n rows of a byte-array column without
// nulls as runs of one value (QueryRunsType): a dictionary-encoded page a
// run of indices at a time, any other page value by value.
func readQueryRuns(c *pageColumn, n int) (arrow.Array, error) {
	q := queryRunsOf{vals: NewStrings(0, 0), limit: int64(c.limit)}
	for n > 0 {
		if c.left == 0 {
			if err := c.nextPage(); err != nil {
				return nil, err
			}
		}
		k := min(n, c.left)
		if err := c.addRuns(&q, k); err != nil {
			return nil, err
		}
		if q.bytes > q.limit {
			return nil, corruptf("string values larger than the input can justify")
		}
		c.left -= k
		n -= k
	}
	return q.array(), nil
}

// addRuns adds the next k values of the page to q.
func (c *pageColumn) addRuns(q *queryRunsOf, k int) error {
	if !c.useIdx {
		b := NewStrings(k, 0)
		if err := c.appendValues(&b, k, k); err != nil {
			return err
		}
		for i := range k {
			q.add(b.Data[b.Offsets[i]:b.Offsets[i+1]], 1)
		}
		return nil
	}
	entry := func(j uint32) ([]byte, error) {
		if int(j) >= c.ndict {
			return nil, corruptf("dictionary index %d of %d entries", j, c.ndict)
		}
		return c.dict.Data[c.dict.Offsets[j]:c.dict.Offsets[j+1]], nil
	}
	return c.indexRuns(k,
		func(j uint32, n int) error {
			v, err := entry(j)
			if err == nil {
				q.add(v, n)
			}
			return err
		},
		func(ix []uint32) error {
			for _, j := range ix {
				v, err := entry(j)
				if err != nil {
					return err
				}
				q.add(v, 1)
			}
			return nil
		})
}
