package retrieval

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/evalgate/evalgate/retriever"
)

// Record is what is stored of one query: its answer, or its failure.
type Record struct {
	QueryID string `json:"query_id"`
	// IDs are the hits in list order; Scores their scores when the
	// retriever file names a score path.
	IDs    []string  `json:"ids"`
	Scores []float64 `json:"scores,omitempty"`
	Short  bool      `json:"short,omitempty"`
	Status int       `json:"status,omitempty"`
	// LatencyNS is the latency of the answer used (0 for a failure),
	// EmbedNS the embeddings request's share of it.
	LatencyNS int64 `json:"latency_ns,omitempty"`
	EmbedNS   int64 `json:"embed_ns,omitempty"`
	Attempts  int   `json:"attempts"`
	// Error is set for a query that got no answer: the last error, with
	// the status and the answer's first bytes, secrets redacted.
	Error string `json:"error,omitempty"`
}

// Failed reports whether the query got no answer.
func (r *Record) Failed() bool { return r.Error != "" }

// recordOf turns the client's answer or query error into a record.
func recordOf(a retriever.Answer, qerr *retriever.QueryError) *Record {
	r := &Record{QueryID: a.QueryID, Attempts: a.Attempts}
	if qerr != nil {
		r.QueryID, r.Status, r.Error = qerr.QueryID, qerr.Status, qerr.Error()
		r.Attempts = max(r.Attempts, qerr.Attempts)
		return r
	}
	r.IDs = make([]string, len(a.Hits))
	scores := false
	for i, h := range a.Hits {
		r.IDs[i] = h.ID
		scores = scores || h.HasScore
	}
	if scores {
		r.Scores = make([]float64, len(a.Hits))
		for i, h := range a.Hits {
			r.Scores[i] = h.Score
		}
	}
	r.Short, r.Status = a.Short, a.Status
	r.LatencyNS, r.EmbedNS = int64(a.Latency), int64(a.EmbedLatency)
	return r
}

// Latency is the latency of the answer used.
func (r *Record) Latency() time.Duration { return time.Duration(r.LatencyNS) }

func (r *Record) encode() ([]byte, error) { return json.Marshal(r) }

// DecodeRecord decodes a stored record.
func DecodeRecord(b []byte) (*Record, error) {
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: decode stored answer: %v", ErrCorrupt, err)
	}
	if r.Scores != nil && len(r.Scores) != len(r.IDs) {
		return nil, fmt.Errorf("%w: stored answer of %q: %d ids, %d scores", ErrCorrupt, r.QueryID, len(r.IDs), len(r.Scores))
	}
	return &r, nil
}
