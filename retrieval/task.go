package retrieval

import (
	"encoding/json"
	"errors"
	"fmt"
)

// Query is one gold query of a task, with what scoring it needs.
type Query struct {
	// Seq is the query's index in the gold set.
	Seq    int64    `json:"seq"`
	ID     string   `json:"id"`
	Text   string   `json:"text"`
	Groups []string `json:"groups,omitempty"`
	// Judged are the judged doc ids in the gold set's order (grade
	// descending, then id), Grades their grades.
	Judged []string `json:"judged,omitempty"`
	Grades []int32  `json:"grades,omitempty"`
	// Baseline is the baseline run's ranking, interned against Judged
	// (ingest.Baseline), in a paired job.
	Baseline []uint32 `json:"baseline,omitempty"`
}

// Task is the payload of a retrieve task.
type Task struct {
	// RetrieverFile names the retriever file; Retriever is its content as
	// written (${VAR} unexpanded: each worker reads its own environment).
	RetrieverFile string `json:"retriever_file"`
	Retriever     string `json:"retriever"`
	// Scoring options that decide which queries are scored, as for a run
	// file.
	RelLevel       int32 `json:"rel_level"`
	Depth          int   `json:"depth,omitempty"`
	SkipNoRelevant bool  `json:"skip_no_relevant,omitempty"`
	OnlyRunQueries bool  `json:"only_run_queries,omitempty"`
	// JudgedOnly counts the unjudged documents scoring drops (trec_eval
	// -J; the task's scoring headers say to drop them).
	JudgedOnly bool `json:"judged_only,omitempty"`
	Paired     bool `json:"paired,omitempty"`
	// Failed is added to the Seq of failed queries (the gold set's size),
	// so they follow every answered query.
	FailedSeq int64   `json:"failed_seq"`
	Queries   []Query `json:"queries"`
}

const taskVersion = 1

type taskEnvelope struct {
	Version int `json:"version"`
	Task
}

// MarshalBinary encodes the task.
func (t *Task) MarshalBinary() ([]byte, error) {
	return json.Marshal(taskEnvelope{Version: taskVersion, Task: *t})
}

// ErrCorrupt marks a payload or a stored answer that cannot be decoded:
// retrying cannot help.
var ErrCorrupt = errors.New("retrieval: corrupt data")

// UnmarshalBinary decodes a task and checks it.
func (t *Task) UnmarshalBinary(b []byte) error {
	var e taskEnvelope
	if err := json.Unmarshal(b, &e); err != nil {
		return fmt.Errorf("%w: decode retrieve task: %v", ErrCorrupt, err)
	}
	if e.Version != taskVersion {
		return fmt.Errorf("%w: retrieve task version %d, this build reads %d", ErrCorrupt, e.Version, taskVersion)
	}
	for i, q := range e.Queries {
		if len(q.Judged) != len(q.Grades) {
			return fmt.Errorf("%w: retrieve task query %d: %d judged docs, %d grades", ErrCorrupt, i, len(q.Judged), len(q.Grades))
		}
	}
	*t = e.Task
	return nil
}
