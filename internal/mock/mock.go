package mock

import (
	"context"
	"time"

	"github.com/evalgate/evalgate/worker"
)

// Task is a worker.Task.
type Task struct {
	JobFunc        func() string
	IDFunc         func() string
	DeliveriesFunc func() int
	HeaderFunc     func(string) string
	PayloadFunc    func(context.Context) ([]byte, error)
	InProgressFunc func(context.Context) error
	AckFunc        func(context.Context) error
	NakFunc        func(context.Context, time.Duration) error
	TermFunc       func(context.Context, string) error
}

var _ worker.Task = (*Task)(nil)

func unset(name string) { panic("mock: " + name + " not set") }

func (t *Task) Job() string {
	if t.JobFunc == nil {
		unset("Task.Job")
	}
	return t.JobFunc()
}

func (t *Task) ID() string {
	if t.IDFunc == nil {
		unset("Task.ID")
	}
	return t.IDFunc()
}

func (t *Task) Deliveries() int {
	if t.DeliveriesFunc == nil {
		unset("Task.Deliveries")
	}
	return t.DeliveriesFunc()
}

func (t *Task) Header(k string) string {
	if t.HeaderFunc == nil {
		unset("Task.Header")
	}
	return t.HeaderFunc(k)
}

func (t *Task) Payload(ctx context.Context) ([]byte, error) {
	if t.PayloadFunc == nil {
		unset("Task.Payload")
	}
	return t.PayloadFunc(ctx)
}

func (t *Task) InProgress(ctx context.Context) error {
	if t.InProgressFunc == nil {
		unset("Task.InProgress")
	}
	return t.InProgressFunc(ctx)
}

func (t *Task) Ack(ctx context.Context) error {
	if t.AckFunc == nil {
		unset("Task.Ack")
	}
	return t.AckFunc(ctx)
}

func (t *Task) Nak(ctx context.Context, d time.Duration) error {
	if t.NakFunc == nil {
		unset("Task.Nak")
	}
	return t.NakFunc(ctx, d)
}

func (t *Task) Term(ctx context.Context, reason string) error {
	if t.TermFunc == nil {
		unset("Task.Term")
	}
	return t.TermFunc(ctx, reason)
}

// TaskSource is a worker.TaskSource.
type TaskSource struct {
	NextFunc func(context.Context) (worker.Task, error)
}

var _ worker.TaskSource = (*TaskSource)(nil)

func (s *TaskSource) Next(ctx context.Context) (worker.Task, error) {
	if s.NextFunc == nil {
		unset("TaskSource.Next")
	}
	return s.NextFunc(ctx)
}

// ResultStore is a worker.ResultStore.
type ResultStore struct {
	PublishPartialFunc func(context.Context, worker.Task, []byte) ([]byte, error)
	ReportFailureFunc  func(context.Context, worker.Task, worker.Failure) error
}

var _ worker.ResultStore = (*ResultStore)(nil)

func (s *ResultStore) PublishPartial(ctx context.Context, t worker.Task, data []byte) ([]byte, error) {
	if s.PublishPartialFunc == nil {
		unset("ResultStore.PublishPartial")
	}
	return s.PublishPartialFunc(ctx, t, data)
}

func (s *ResultStore) ReportFailure(ctx context.Context, t worker.Task, f worker.Failure) error {
	if s.ReportFailureFunc == nil {
		unset("ResultStore.ReportFailure")
	}
	return s.ReportFailureFunc(ctx, t, f)
}
