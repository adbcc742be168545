package summary

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestLatencyOfNearestRank(t *testing.T) {
	// 1..100 ms: P(p) is the p-th value.
	var ns []int64
	for i := 100; i >= 1; i-- {
		ns = append(ns, int64(i)*1e6)
	}
	l := LatencyOf(ns)
	want := Latency{P50: 50, P90: 90, P95: 95, P99: 99, Max: 100, Mean: 50.5}
	if l != want {
		t.Fatalf("latency %+v, want %+v", l, want)
	}
	if l := LatencyOf([]int64{7e6}); l.P50 != 7 || l.P99 != 7 || l.Max != 7 || l.Mean != 7 {
		t.Fatalf("one latency: %+v", l)
	}
	if l := LatencyOf(nil); l != (Latency{}) {
		t.Fatalf("no latency: %+v", l)
	}
	// The order of the input does not matter.
	shuffled := slices.Clone(ns)
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if LatencyOf(shuffled) != want {
		t.Fatal("the percentiles depend on the order of the latencies")
	}
}

func TestHistogramCountsEveryLatency(t *testing.T) {
	ns := []int64{50e3, 2e6, 2e6, 20e6, 310e6}
	bins := HistogramOf(ns)
	total := int64(0)
	prev := 0.0
	for i, b := range bins {
		if b.UpToMS <= prev {
			t.Fatalf("bin %d bound %v after %v", i, b.UpToMS, prev)
		}
		prev = b.UpToMS
		total += b.Count
	}
	if total != int64(len(ns)) || bins[0].Count != 1 || bins[len(bins)-1].UpToMS <= 310 {
		t.Fatalf("bins %+v", bins)
	}
	if HistogramOf(nil) != nil {
		t.Fatal("a histogram of nothing")
	}
}
