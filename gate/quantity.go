package gate

import (
	"fmt"
	"math"
	"strings"

	"github.com/evalgate/evalgate/summary"
)

// Units of what a gate checks (summary.GateResult.Unit): a quality
// measure is a fraction (shown as a percentage, changes in points); a cost
// of a live retrieval is in milliseconds or a count of queries.
const (
	UnitFraction = ""
	UnitMS       = "ms"
	UnitQueries  = "queries"
)

// costOf returns a cost figure of a summary's live retrieval, over all
// queries or a tag group ("name=value"), with the number of answered
// queries it rests on. ok is false when the summary has no live retrieval
// or no such group.
func costOf(r *summary.Retrieval, cost, tag string) (v float64, answered int64, ok bool) {
	if r == nil {
		return 0, 0, false
	}
	lat, failed, answered := r.Latency, r.Failed, r.Answered
	if tag != "" {
		g := r.GroupLatency(tag)
		if g == nil {
			return 0, 0, false
		}
		lat, failed, answered = g.Latency, g.Failed, g.Answered
	}
	if cost == "failed_queries" {
		return float64(failed), answered + failed, true
	}
	which := strings.TrimSuffix(strings.TrimPrefix(cost, "latency_"), "_ms")
	v, ok = lat.LatencyMS(which)
	return v, answered, ok
}

// valueText formats a gated value in its unit: "87.0%", "42.5 ms", "3".
func valueText(unit string, x float64) string {
	switch unit {
	case UnitMS:
		return fmt.Sprintf("%.1f ms", x)
	case UnitQueries:
		return fmt.Sprintf("%.0f", x)
	}
	return pct(x)
}

// deltaText formats a change of a gated value: "−5.8 points", "+12.4
// ms", "+2 queries".
func deltaText(unit string, d float64) string {
	switch unit {
	case UnitMS:
		if math.Abs(d) < 0.05 {
			return "±0.0 ms"
		}
		return signedNumber(d, "%.1f") + " ms"
	case UnitQueries:
		if d == 0 {
			return "±0 queries"
		}
		return signedNumber(d, "%.0f") + " queries"
	}
	return points(d)
}

// signedNumber formats d with a sign, a minus sign as everywhere in the
// reports.
func signedNumber(d float64, format string) string {
	if d < 0 {
		return "−" + fmt.Sprintf(format, -d)
	}
	return "+" + fmt.Sprintf(format, d)
}

// limitText formats a cost's limit in its unit, without a sign.
func limitText(unit string, x float64) string {
	if unit == UnitQueries {
		return summary.Count(int64(x), "query", "queries")
	}
	return valueText(unit, x)
}
