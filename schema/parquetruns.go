package schema

import (
	"github.com/apache/arrow/go/v16/arrow"
)

// readQueryRuns reads the next n rows of a byte-array column without
// nulls as runs of one value (QueryRunsType): a dictionary-encoded page a
// run of indices at a time, any other page value by value.
func readQueryRuns(c *pageColumn, n int) (arrow.Array, error) {
	q := newQueryRuns()
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
		if q.bytes > int64(c.limit) {
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
			q.add(b.Value(i), 1)
		}
		return nil
	}
	entry := func(j uint32) (string, error) {
		if int(j) >= c.ndict {
			return "", corruptf("dictionary index %d of %d entries", j, c.ndict)
		}
		return c.dict.Value(int(j)), nil
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
