package mock

import (
	"time"

	"github.com/evalgate/evalgate/llm"
	"github.com/evalgate/evalgate/retriever"
	"github.com/evalgate/evalgate/worker"
)

// WorkerMetrics is a worker.Metrics.
type WorkerMetrics struct {
	TaskStartedFunc      func(kind string, delivery int)
	TaskFinishedFunc     func(kind, outcome string, took time.Duration, queries int)
	RetrieverAttemptFunc func(a retriever.Attempt)
	LLMAttemptFunc       func(a llm.Attempt)
}

var _ worker.Metrics = (*WorkerMetrics)(nil)

func (m *WorkerMetrics) TaskStarted(kind string, delivery int) {
	if m.TaskStartedFunc == nil {
		unset("WorkerMetrics.TaskStarted")
	}
	m.TaskStartedFunc(kind, delivery)
}

func (m *WorkerMetrics) TaskFinished(kind, outcome string, took time.Duration, queries int) {
	if m.TaskFinishedFunc == nil {
		unset("WorkerMetrics.TaskFinished")
	}
	m.TaskFinishedFunc(kind, outcome, took, queries)
}

func (m *WorkerMetrics) RetrieverAttempt(a retriever.Attempt) {
	if m.RetrieverAttemptFunc == nil {
		unset("WorkerMetrics.RetrieverAttempt")
	}
	m.RetrieverAttemptFunc(a)
}

func (m *WorkerMetrics) LLMAttempt(a llm.Attempt) {
	if m.LLMAttemptFunc == nil {
		unset("WorkerMetrics.LLMAttempt")
	}
	m.LLMAttemptFunc(a)
}
