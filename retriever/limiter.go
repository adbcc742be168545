package retriever

import "github.com/evalgate/evalgate/internal/httpcall"

// Limiter spaces requests out. The client calls Wait before every
// attempt, after it has taken its concurrency slot, so that a request is
// sent as soon as Wait returns. Wait must be safe for concurrent use, and
// return ctx's error promptly when ctx ends. (The same interface as
// llm.Limiter: one job-wide limiter serves both.)
type Limiter = httpcall.Limiter

// LocalLimiter is an in-process Limiter: a GCRA (a token bucket holding
// one token) that spaces requests exactly 1/rate apart, so that no
// one-second window holds more than rate requests (rate+1 when both ends
// of a closed window fall on a request). Idle time earns no burst. A Wait
// cancelled by its context keeps its slot: the limiter errs on the slow
// side.
type LocalLimiter = httpcall.LocalLimiter

// NewLocalLimiter returns a limiter of rate requests per second; 0 (or
// less) means unlimited.
func NewLocalLimiter(rate float64) *LocalLimiter { return httpcall.NewLocalLimiter(rate) }
