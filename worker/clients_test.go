package worker

import (
	"errors"
	"testing"
	"time"
)

type closeCounter struct{ closed int }

func (c *closeCounter) Close() { c.closed++ }

// TestClientCache: one client per key, built once; a failed build is not
// kept; a client idle for longer than clientIdle is closed and rebuilt.
func TestClientCache(t *testing.T) {
	cc := newClientCache[*closeCounter]()
	builds := 0
	build := func() (*closeCounter, error) { builds++; return &closeCounter{}, nil }
	a, err := cc.get("job|x", build)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := cc.get("job|x", build); b != a || builds != 1 {
		t.Fatalf("second get: same client %v, %d builds; want the same, 1", b == a, builds)
	}
	if _, err := cc.get("job|y", func() (*closeCounter, error) { return nil, errors.New("bad file") }); err == nil {
		t.Fatal("a failed build gave no error")
	}
	if _, ok := cc.m["job|y"]; ok {
		t.Fatal("a failed build was kept")
	}
	cc.m["job|x"].used = time.Now().Add(-clientIdle - time.Second)
	c, _ := cc.get("job|x", build)
	if c == a || a.closed != 1 || builds != 2 {
		t.Fatalf("after idling: new client %v, old closed %d times, %d builds; want new, 1, 2", c != a, a.closed, builds)
	}
}
