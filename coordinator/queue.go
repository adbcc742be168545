package coordinator

import (
	"context"
	"strings"
	"time"

	"github.com/evalgate/evalgate/ingest"
	"github.com/evalgate/evalgate/shard"
)

// TaskSpec is one task to publish: an encoded shard part and the headers
// that tell a worker how to score it.
type TaskSpec struct {
	Job, ID string
	Payload []byte
	Digest  string // hex SHA-256 of Payload
	Queries int
	Headers map[string]string
	// Republish is 0 for a task's first publication (and for publishing it
	// again when resuming a job), and n > 0 for the n-th time the
	// coordinator re-publishes tasks the queue lost. A re-publication must
	// really enqueue the task, so it cannot reuse the first publication's
	// deduplication id, which the queue may still remember.
	Republish int
}

// Event is something the coordinator learns about a task of its job.
type Event struct {
	Task string
	// Partial is set for a stored result (the first one for the task).
	Partial []byte
	Worker  string
	// Dead is set when the task failed for good: Reason says why.
	Dead       bool
	Reason     string
	Deliveries int
}

// Watcher delivers the events of one job: every stored partial (including
// those stored before Watch was called) and every final failure.
type Watcher interface {
	// Next blocks until an event arrives or ctx is done.
	Next(ctx context.Context) (Event, error)
	// Stop releases the watcher; Next then fails.
	Stop()
}

// Queue is what the distributed coordinator needs from the message queue.
// Implementations must be safe for concurrent use.
type Queue interface {
	// PublishTask enqueues a task and reports whether this call enqueued
	// it. It is false, with no error, when the task is already pending (a
	// task is pending at most once) or when the queue recognised the
	// publication as a duplicate of one it accepted recently (the same job,
	// task and Republish): the queue has, or had, that task, and this call
	// added nothing.
	PublishTask(ctx context.Context, t TaskSpec) (enqueued bool, err error)
	// TaskPending reports whether the task waits in the queue (or is held
	// by a worker).
	TaskPending(ctx context.Context, job, task string) (bool, error)
	// HasPartial reports whether a result is stored for the task.
	HasPartial(ctx context.Context, job, task string) (bool, error)
	// Watch starts delivering the job's events.
	Watch(ctx context.Context, job string) (Watcher, error)
	// PutManifest stores a job manifest; GetManifest reads one back
	// (ErrJobNotFound if absent); ListManifests lists them all.
	PutManifest(ctx context.Context, m *Manifest) error
	GetManifest(ctx context.Context, job string) (*Manifest, error)
	ListManifests(ctx context.Context) ([]*Manifest, error)
	// Settlement reports how many of the job's tasks are still in the work
	// queue and the job's final failures. It must read the queue before
	// the failures: a worker records a final failure before it terminates
	// the task, so once no task is left every failure is reported.
	Settlement(ctx context.Context, job string) (Settlement, error)
	// WorkerCount is the number of workers seen recently.
	WorkerCount(ctx context.Context) (int, error)
	// PurgeJob removes the job's pending tasks and payload objects.
	PurgeJob(ctx context.Context, job string) error
	// Answers calls fn with every answer a live retrieval job stored, in
	// no particular order.
	Answers(ctx context.Context, job string, fn func(data []byte) error) error
}

// Settlement is what is left of a job in the queue.
type Settlement struct {
	// Pending counts the job's tasks still in the work queue: waiting, held
	// by a worker (which may have stored the result but not yet
	// acknowledged the task, or may be about to report that its result
	// differs from the stored one), or left there after MaxDeliver.
	Pending int
	// Failures are the job's final failures (Event.Dead set).
	Failures []Event
}

// Manifest states.
const (
	StateIngesting = "ingesting" // tasks are being published
	StatePublished = "published" // every task is published; scoring
	StateDone      = "done"
	StateFailed    = "failed"
)

// Manifest records a job in the queue's key-value store: enough to resume
// it after a coordinator crash and to report on it.
type Manifest struct {
	Version       int       `json:"version"`
	Job           string    `json:"job"`
	State         string    `json:"state"`
	Created       time.Time `json:"created"`
	Updated       time.Time `json:"updated"`
	Config        JobConfig `json:"config"`
	HashAlgorithm string    `json:"hash_algorithm"`
	Parts         []int     `json:"parts,omitempty"` // parts per shard, once published
	// Regrouped is set once the coordinator found the run interleaved (a
	// query's lines in several places): its tasks are cut from the run
	// regrouped through spill files and named accordingly (TaskID), and
	// results of the tasks cut before are ignored.
	Regrouped  bool          `json:"regrouped,omitempty"`
	Tasks      int           `json:"tasks"`
	Queries    int64         `json:"queries"`
	GoldDigest string        `json:"gold_digest,omitempty"`
	RunDigest  string        `json:"run_digest,omitempty"`
	Stats      *ingest.Stats `json:"stats,omitempty"`
	// BaselineDigest and BaselineStats describe the baseline run, when
	// there is one.
	BaselineDigest string        `json:"baseline_digest,omitempty"`
	BaselineStats  *ingest.Stats `json:"baseline_stats,omitempty"`
	Error          string        `json:"error,omitempty"`
	Done           int           `json:"done,omitempty"` // tasks scored, when the job ended
}

// TaskIDs lists the job's tasks, once published.
func (m *Manifest) TaskIDs() []string {
	var ids []string
	for s, n := range m.Parts {
		for p := 0; p < n; p++ {
			ids = append(ids, TaskID(shard.ID(s), p, m.Regrouped))
		}
	}
	return ids
}

// Abandoned reports whether task was cut before the job's run was
// regrouped: its result (or failure) no longer counts.
func (m *Manifest) Abandoned(task string) bool {
	_, part, _ := strings.Cut(task, "-")
	return m.Regrouped && !strings.HasPrefix(part, "r")
}

// ManifestVersion is the layout version written by this build.
const ManifestVersion = 1

// JobConfig is the part of a Job that travels in the manifest.
type JobConfig struct {
	GoldPath       string   `json:"gold_path"`
	GoldFormat     string   `json:"gold_format"`
	RunPath        string   `json:"run_path"`
	RunFormat      string   `json:"run_format"`
	Measures       []string `json:"measures"`
	RelLevel       int32    `json:"rel_level"`
	RankBy         string   `json:"rank_by"`
	Depth          int      `json:"depth"`
	Strict         bool     `json:"strict"`
	SkipNoRelevant bool     `json:"skip_no_relevant"`
	OnlyRunQueries bool     `json:"only_run_queries"`
	JudgedOnly     bool     `json:"judged_only,omitempty"`
	Shards         int      `json:"shards"`
	PartBytes      int      `json:"part_bytes"`
	BufferBytes    int      `json:"buffer_bytes,omitempty"` // 0 in manifests written before the budget existed
	PerQuery       bool     `json:"per_query"`
	BaselinePath   string   `json:"baseline_path,omitempty"`
	BaselineFormat string   `json:"baseline_format,omitempty"`
	Paired         bool     `json:"paired,omitempty"`
	Pairing        string   `json:"pairing,omitempty"`
	CurveDepth     int      `json:"curve_depth,omitempty"`
	// A live retrieval's retriever file, as written (${VAR} references,
	// never their values), its queries per task and failure budget.
	RetrieverFile    string `json:"retriever_file,omitempty"`
	RetrieverSource  string `json:"retriever_source,omitempty"`
	QueriesPerTask   int    `json:"queries_per_task,omitempty"`
	MaxFailedQueries string `json:"max_failed_queries,omitempty"`
	// A judge job's LLM file as written, corpus and options.
	LLMFile      string `json:"llm_file,omitempty"`
	LLMSource    string `json:"llm_source,omitempty"`
	Corpus       string `json:"corpus,omitempty"`
	JudgeDepth   int    `json:"judge_depth,omitempty"`
	Rejudge      int    `json:"rejudge,omitempty"`
	JudgeSeed    uint64 `json:"judge_seed,omitempty"`
	MaxTokens    int64  `json:"max_tokens,omitempty"`
	PairsPerTask int    `json:"pairs_per_task,omitempty"`
}
