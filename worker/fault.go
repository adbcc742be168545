package worker

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evalgate/evalgate/internal/crash"
)

// FaultPlan injects failures so the fault-tolerance tests can exercise the
// real code paths. It is set only by tests (directly, or through the
// EVALGATE_TEST_FAULT environment variable of a worker process, see
// ParseFaultPlan). A nil plan injects nothing.
type FaultPlan struct {
	// KillDuringScore makes the process SIGKILL itself while scoring the
	// n-th task it takes (1-based; 0: never).
	KillDuringScore int
	// FailTask makes every attempt at the task with this ID fail with
	// FailReason (a poison task).
	FailTask   string
	FailReason string
	// ScoreTwice publishes every result twice, as a redelivered task would.
	ScoreTwice bool
	// CorruptSecond alters the result of the second publish (with
	// ScoreTwice), to prove the determinism check catches it.
	CorruptSecond bool
	// StallAfterPublish sleeps this long after storing the partial and
	// before acking, so the ack arrives after the ack wait (a late ack).
	StallAfterPublish time.Duration
	// SlowTask makes scoring the task with this ID ("*": every task) take
	// SlowFor longer (with progress reported meanwhile), to keep a job
	// open.
	SlowTask string
	SlowFor  time.Duration

	// Duplicates counts results this worker found already stored (and
	// equal): evidence, for the tests, that a task was scored twice.
	Duplicates atomic.Int64

	mu    sync.Mutex
	taken int
}

// ErrInjected marks injected failures.
var ErrInjected = errors.New("injected fault")

// ParseFaultPlan reads a plan like "kill-during-score=2,fail-task=000001-0000"
// (keys: kill-during-score, fail-task, fail-reason, score-twice,
// corrupt-second, stall-after-publish, slow-task=ID:duration). An empty
// string gives nil.
func ParseFaultPlan(s string) (*FaultPlan, error) {
	if s == "" {
		return nil, nil
	}
	p := &FaultPlan{}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "kill-during-score":
			p.KillDuringScore, err = strconv.Atoi(v)
		case "fail-task":
			p.FailTask = v
		case "fail-reason":
			p.FailReason = v
		case "score-twice":
			p.ScoreTwice = true
		case "corrupt-second":
			p.CorruptSecond = true
		case "stall-after-publish":
			p.StallAfterPublish, err = time.ParseDuration(v)
		case "slow-task":
			id, d, _ := strings.Cut(v, ":")
			p.SlowTask = id
			p.SlowFor, err = time.ParseDuration(d)
		default:
			err = fmt.Errorf("unknown fault %q", k)
		}
		if err != nil {
			return nil, fmt.Errorf("parse fault plan %q: %w", s, err)
		}
	}
	return p, nil
}

func (p *FaultPlan) duringScore(ctx context.Context, t Task) error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	p.taken++
	n := p.taken
	p.mu.Unlock()
	if p.KillDuringScore > 0 && n == p.KillDuringScore {
		crash.Now()
		<-ctx.Done() // not reached
	}
	if p.SlowTask != "" && (p.SlowTask == "*" || t.ID() == p.SlowTask) {
		select {
		case <-time.After(p.SlowFor):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if p.FailTask != "" && t.ID() == p.FailTask {
		reason := p.FailReason
		if reason == "" {
			reason = "poison task"
		}
		return fmt.Errorf("%w: %s", ErrInjected, reason)
	}
	return nil
}

func (p *FaultPlan) scoreTwice() bool { return p != nil && p.ScoreTwice }

func (p *FaultPlan) second(result []byte) []byte {
	if !p.CorruptSecond {
		return result
	}
	altered := append([]byte(nil), result...)
	altered[len(altered)-1] ^= 0xff
	return altered
}

func (p *FaultPlan) afterPublish(t Task) {
	if p == nil || p.StallAfterPublish == 0 {
		return
	}
	time.Sleep(p.StallAfterPublish)
}

func (p *FaultPlan) sawDuplicate() {
	if p != nil {
		p.Duplicates.Add(1)
	}
}
