package retrieval

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Budget is how many queries of a job may fail (get no answer after every
// retry) before the job fails: a count, or a percentage of the queries
// asked. The zero Budget allows none.
type Budget struct {
	Count   int64
	Percent float64 // used when IsPercent
	// IsPercent says the budget is Percent of the queries.
	IsPercent bool
}

// ParseBudget parses --max-failed-queries: "N" or "P%".
func ParseBudget(s string) (Budget, error) {
	s = strings.TrimSpace(s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		x, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(x) || x < 0 || x > 100 {
			return Budget{}, fmt.Errorf("--max-failed-queries %q: want a count or a percentage from 0%% to 100%%", s)
		}
		return Budget{Percent: x, IsPercent: true}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return Budget{}, fmt.Errorf("--max-failed-queries %q: want a count (0 or more) or a percentage such as 1%%", s)
	}
	return Budget{Count: n}, nil
}

// Allowed returns the failures allowed among queries.
func (b Budget) Allowed(queries int64) int64 {
	if b.IsPercent {
		return int64(math.Floor(b.Percent / 100 * float64(queries)))
	}
	return b.Count
}

// String renders the budget as ParseBudget reads it.
func (b Budget) String() string {
	if b.IsPercent {
		return strconv.FormatFloat(b.Percent, 'f', -1, 64) + "%"
	}
	return strconv.FormatInt(b.Count, 10)
}
