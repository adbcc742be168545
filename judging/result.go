package judging

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Result is what a judge task yields: its pairs' records, in order.
type Result struct {
	Records []Record `json:"records"`
}

// DecodeResult decodes a task's result.
func DecodeResult(b []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: decode judge result: %v", ErrCorrupt, err)
	}
	return &r, nil
}

// Totals merges a job's results, in any order.
type Totals struct {
	Records []Record
	// Judged and Failed count the pairs; Cached the judgments taken from
	// the cache; the tokens are those billed in this job.
	Judged, Failed, Cached         int64
	PromptTokens, CompletionTokens int64
}

// Merge adds a task's result.
func (t *Totals) Merge(r *Result) {
	for _, rec := range r.Records {
		t.Records = append(t.Records, rec)
		switch {
		case rec.Failed():
			t.Failed++
		default:
			t.Judged++
		}
		if rec.Cached {
			t.Cached++
		}
		t.PromptTokens += int64(rec.PromptTokens)
		t.CompletionTokens += int64(rec.CompletionTokens)
	}
}

// Tokens is the tokens billed so far.
func (t *Totals) Tokens() int64 { return t.PromptTokens + t.CompletionTokens }

// Sorted returns the records sorted by query and doc id.
func (t *Totals) Sorted() []Record {
	out := slices.Clone(t.Records)
	slices.SortFunc(out, func(a, b Record) int {
		return cmp.Or(strings.Compare(a.QueryID, b.QueryID), strings.Compare(a.DocID, b.DocID))
	})
	return out
}
