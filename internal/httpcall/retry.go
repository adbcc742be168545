package httpcall

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Backoff computes the wait before a retry: for retry n (from 1), a
// uniform random duration in [0, min(Max, Base·2^(n-1))] ("full jitter",
// so that the retries of many clients do not come back together).
type Backoff struct {
	Base, Max time.Duration
}

// Delay returns the wait before retry n (from 1).
func (b Backoff) Delay(n int) time.Duration {
	ceiling := b.Max
	if shift := max(n, 1) - 1; shift < 62 && b.Base <= b.Max>>shift {
		ceiling = b.Base << shift // no overflow: at most Max
	}
	if ceiling <= 0 {
		return 0
	}
	return rand.N(ceiling + 1)
}

// Sleep waits for d, or until ctx ends (then it returns ctx's error).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RetryableStatus reports whether an answer with this status may succeed
// when sent again: 408, 429 and 5xx.
func RetryableStatus(status int) bool {
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// ParseRetryAfter reads a Retry-After value: seconds, or an HTTP date (a
// date in the past is 0). A number of seconds beyond 32 bits is 2³² s,
// longer than any cap.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if strings.Trim(v, "0123456789") == "" {
		secs, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			secs = 1 << 32
		}
		return time.Duration(secs) * time.Second, true
	}
	t, perr := http.ParseTime(v)
	if perr != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// StatusClass is an HTTP status's class for metrics: "2xx", "3xx", "4xx",
// "5xx", or "error" when no answer came (status 0) or the status is not
// an HTTP status.
func StatusClass(status int) string {
	if status < 100 || status > 599 {
		return "error"
	}
	return fmt.Sprintf("%dxx", status/100)
}
