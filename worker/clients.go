package worker

import (
	"sync"
	"time"
)

// clientIdle is how long an unused retriever or LLM client is kept.
const clientIdle = 10 * time.Minute

// clientCache keeps one client per key (a job and the digest of the file
// that describes its service), so that the worker's tasks of a job share
// the file's concurrency (requests in flight per worker) and the job's
// rate limit; in-process workers of a job share one client. A client
// unused for clientIdle is closed when the cache is next used.
type clientCache[C interface{ Close() }] struct {
	mu sync.Mutex
	m  map[string]*cachedClient[C]
}

type cachedClient[C any] struct {
	c    C
	used time.Time
}

func newClientCache[C interface{ Close() }]() *clientCache[C] {
	return &clientCache[C]{m: map[string]*cachedClient[C]{}}
}

// get returns the client of key, made by build the first time.
func (cc *clientCache[C]) get(key string, build func() (C, error)) (C, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	now := time.Now()
	for k, e := range cc.m {
		if now.Sub(e.used) > clientIdle {
			e.c.Close()
			delete(cc.m, k)
		}
	}
	if e := cc.m[key]; e != nil {
		e.used = now
		return e.c, nil
	}
	c, err := build()
	if err != nil {
		var none C
		return none, err
	}
	cc.m[key] = &cachedClient[C]{c: c, used: now}
	return c, nil
}
