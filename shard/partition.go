package shard

import (
	"fmt"
	"math/bits"

	"github.com/zeebo/xxh3"
)

// HashAlgorithm names the partition function; it is recorded in job
// manifests so that a coordinator never mixes partitions of two versions.
const HashAlgorithm = "xxh3-64/lemire"

// MaxShards bounds the shard count.
const MaxShards = 1 << 16

// ID identifies a shard within a job.
type ID uint32

func (id ID) String() string { return fmt.Sprintf("%06d", uint32(id)) }

// Of returns the shard of a query among n shards: xxh3-64 of the query id,
// mapped to [0,n) by the high word of a 64×64-bit product, which is
// unbiased and needs no division.
func Of(queryID string, n int) ID {
	hi, _ := bits.Mul64(xxh3.HashString(queryID), uint64(n))
	return ID(hi)
}
