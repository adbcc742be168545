package jsq

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/evalgate/evalgate/gate"
)

// BucketHistory is the object store of evaluation summaries kept by
// `--history jetstream` (one object per run, named by time).
const BucketHistory = "evalgate-history"

// History is a gate.HistoryStore in the JetStream object store.
type History struct{ c *Conn }

// History returns the history store on this connection.
func (c *Conn) History() *History { return &History{c: c} }

func (h *History) store(ctx context.Context) (jetstream.ObjectStore, error) {
	obs, err := h.c.js.ObjectStore(ctx, BucketHistory)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = h.c.js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: BucketHistory,
			Description: "evalgate evaluation summaries, one per run", Storage: jetstream.FileStorage})
	}
	if err != nil {
		return nil, fmt.Errorf("open object store %s: %w", BucketHistory, h.c.explain(err))
	}
	return obs, nil
}

// Put stores one summary.
func (h *History) Put(ctx context.Context, name string, data []byte) error {
	obs, err := h.store(ctx)
	if err != nil {
		return err
	}
	err = h.c.retry(ctx, "store history entry", payloadTimeout(len(data)), func(ctx context.Context) error {
		return h.c.putObject(ctx, obs, name, data)
	})
	if err != nil {
		return fmt.Errorf("store history entry %s: %w", name, h.c.explain(err))
	}
	return nil
}

// List returns every summary, oldest first (names sort by time).
func (h *History) List(ctx context.Context) ([]gate.HistoryEntry, error) {
	obs, err := h.store(ctx)
	if err != nil {
		return nil, err
	}
	infos, err := obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list history: %w", h.c.explain(err))
	}
	slices.SortFunc(infos, func(a, b *jetstream.ObjectInfo) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	out := make([]gate.HistoryEntry, 0, len(infos))
	for _, info := range infos {
		b, err := obs.GetBytes(ctx, info.Name)
		if err != nil {
			return nil, fmt.Errorf("read history entry %s: %w", info.Name, h.c.explain(err))
		}
		out = append(out, gate.HistoryEntry{Name: BucketHistory + "/" + info.Name, Data: b})
	}
	return out, nil
}
