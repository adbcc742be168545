package shard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/apache/arrow/go/v16/arrow"
	"github.com/apache/arrow/go/v16/arrow/ipc"
	"github.com/apache/arrow/go/v16/arrow/memory"

	"github.com/evalgate/evalgate/schema"
)

// ErrCorrupt marks a payload that cannot be decoded: retrying cannot help.
var ErrCorrupt = errors.New("shard: corrupt payload")

// Encode writes the rows as an Arrow IPC stream (one record batch, LZ4
// frame body compression, which decodes several times faster than zstd for
// a modest loss of ratio on interned ids).
func Encode(r *Rows) ([]byte, error) {
	rec := r.Record()
	defer rec.Release()
	var b bytes.Buffer
	b.Grow(r.Size() + 4096) // LZ4 output is smaller than the input
	w := ipc.NewWriter(&b, ipc.WithSchema(rec.Schema()), ipc.WithLZ4())
	if err := w.Write(rec); err != nil {
		return nil, fmt.Errorf("encode shard: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("encode shard: %w", err)
	}
	return b.Bytes(), nil
}

// Digest returns the hex SHA-256 of a payload, which travels with the task
// so that a worker never scores bytes that changed on the way.
func Digest(payload []byte) string {
	sum := sha256.Sum256(payload)
	return hex.EncodeToString(sum[:])
}

// Decode reads the records of an encoded shard part and checks that each
// satisfies the shard-batch invariants. The caller must Release them.
// Errors wrap ErrCorrupt.
func Decode(payload []byte) (recs []arrow.Record, err error) {
	defer func() {
		if p := recover(); p != nil {
			for _, r := range recs {
				r.Release()
			}
			recs, err = nil, fmt.Errorf("%w: %v", ErrCorrupt, p)
		}
	}()
	// Check the framing first: the Arrow reader sizes allocations by the
	// lengths it finds, and a hostile payload could ask for terabytes.
	if err := schema.CheckIPCStream(bytes.NewReader(payload), int64(len(payload))); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	mem := schema.LimitedAllocator{Allocator: memory.DefaultAllocator, Limit: schema.AllocationLimit(int64(len(payload)))}
	rd, err := ipc.NewReader(bytes.NewReader(payload), ipc.WithAllocator(mem))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	defer rd.Release()
	for rd.Next() {
		rec := rd.Record()
		rec.Retain()
		recs = append(recs, rec)
		v, err := schema.ViewShardBatch(rec)
		if err == nil {
			err = v.Validate()
		}
		if err != nil {
			for _, r := range recs {
				r.Release()
			}
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
	}
	if err := rd.Err(); err != nil {
		for _, r := range recs {
			r.Release()
		}
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return recs, nil
}
