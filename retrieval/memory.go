package retrieval

import (
	"context"
	"maps"
	"sync"
)

// MemoryAnswers keeps a job's answers in memory: the answer store of a
// live retrieval run in one process (`score --retriever`). Safe for
// concurrent use.
type MemoryAnswers struct {
	mu     sync.Mutex
	byTask map[string]map[int][]byte
}

// Task returns the store of one task's answers.
func (m *MemoryAnswers) Task(task string) Answers { return memoryTask{m, task} }

// Each calls fn for every stored record, in no particular order.
func (m *MemoryAnswers) Each(fn func(data []byte) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, task := range m.byTask {
		for _, v := range task {
			if err := fn(v); err != nil {
				return err
			}
		}
	}
	return nil
}

type memoryTask struct {
	m    *MemoryAnswers
	task string
}

func (t memoryTask) Load(context.Context) (map[int][]byte, error) {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	return maps.Clone(t.m.byTask[t.task]), nil
}

func (t memoryTask) Store(_ context.Context, n int, data []byte) ([]byte, error) {
	t.m.mu.Lock()
	defer t.m.mu.Unlock()
	if t.m.byTask == nil {
		t.m.byTask = map[string]map[int][]byte{}
	}
	answers := t.m.byTask[t.task]
	if answers == nil {
		answers = map[int][]byte{}
		t.m.byTask[t.task] = answers
	}
	if old, ok := answers[n]; ok {
		return old, nil
	}
	answers[n] = data
	return data, nil
}
