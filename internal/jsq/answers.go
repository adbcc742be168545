package jsq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/evalgate/evalgate/judging"
	"github.com/evalgate/evalgate/retrieval"
	"github.com/evalgate/evalgate/retriever"
)

// StreamAnswers keeps the answers of live retrievals: one message per job,
// task and query, the first one stored wins.
const StreamAnswers = "EVALGATE_ANSWERS"

const prefixAnswer = "evalgate.answer."

func answerSubject(job, task string, n int) string {
	return prefixAnswer + job + "." + task + "." + strconv.Itoa(n)
}

// TaskAnswers returns the answer store of one retrieve task.
func (c *Conn) TaskAnswers(job, task string) retrieval.Answers { return taskAnswers{c, job, task} }

// JobLimiter returns the rate limiter every worker of a job shares for one
// service ("retriever", "llm").
func (c *Conn) JobLimiter(job, service string, rate float64) (retriever.Limiter, error) {
	return c.RateLimiter(job+"."+service, rate)
}

type taskAnswers struct {
	c         *Conn
	job, task string
}

// Load reads the task's stored answers: the subjects that hold one, then
// each subject's message.
func (a taskAnswers) Load(ctx context.Context) (map[int][]byte, error) {
	prefix := prefixAnswer + a.job + "." + a.task + "."
	subjects, err := a.c.subjects(ctx, StreamAnswers, prefix+">")
	if err != nil {
		return nil, err
	}
	out := make(map[int][]byte, len(subjects))
	for subject := range subjects {
		n, err := strconv.Atoi(strings.TrimPrefix(subject, prefix))
		if err != nil {
			return nil, fmt.Errorf("read answers of task %s: unexpected subject %s", a.task, subject)
		}
		data, err := a.c.lastMessage(ctx, StreamAnswers, subject)
		if err != nil {
			return nil, err
		}
		out[n] = data
	}
	return out, nil
}

// Store stores query n's answer unless one is: the stream keeps one
// message per subject and rejects later ones (error 10077), and a retried
// publication comes back as a duplicate; either way the stored answer is
// read and returned.
func (a taskAnswers) Store(ctx context.Context, n int, data []byte) ([]byte, error) {
	subject := answerSubject(a.job, a.task, n)
	msg := &nats.Msg{Subject: subject, Data: data}
	stored := true
	err := a.c.retry(ctx, "store answer", attemptTimeout, func(ctx context.Context) error {
		ack, err := a.c.js.PublishMsg(ctx, msg, jetstream.WithMsgID(a.job+"/"+a.task+"/"+strconv.Itoa(n)))
		if err == nil {
			stored = !ack.Duplicate
		}
		return err
	})
	switch {
	case isSubjectFull(err):
		stored = false
	case err != nil:
		return nil, fmt.Errorf("store answer %s: %w", subject, a.c.explain(err))
	}
	if stored {
		return data, nil
	}
	return a.c.lastMessage(ctx, StreamAnswers, subject)
}

// lastMessage returns the data of a subject's last message.
func (c *Conn) lastMessage(ctx context.Context, stream, subject string) ([]byte, error) {
	var data []byte
	err := c.retry(ctx, "read "+stream, attemptTimeout, func(ctx context.Context) error {
		s, err := c.js.Stream(ctx, stream)
		if err != nil {
			return err
		}
		m, err := s.GetLastMsgForSubject(ctx, subject)
		if err != nil {
			return err
		}
		data = m.Data
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", subject, c.explain(err))
	}
	return data, nil
}

// Answers calls fn with every answer stored for the job, reading them with
// an ordered consumer.
func (c *Conn) Answers(ctx context.Context, job string, fn func(data []byte) error) error {
	filter := prefixAnswer + job + ".>"
	subjects, err := c.subjects(ctx, StreamAnswers, filter)
	if err != nil {
		return err
	}
	want := 0
	for _, n := range subjects {
		want += int(n)
	}
	if want == 0 {
		return nil
	}
	cons, err := c.js.OrderedConsumer(ctx, StreamAnswers, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		return fmt.Errorf("read answers of job %s: %w", job, c.explain(err))
	}
	for got := 0; got < want; {
		batch, err := cons.Fetch(min(want-got, 512), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return fmt.Errorf("read answers of job %s: %w", job, c.explain(err))
		}
		n := 0
		for m := range batch.Messages() {
			if err := fn(m.Data()); err != nil {
				return err
			}
			n++
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return fmt.Errorf("read answers of job %s: %w", job, c.explain(err))
		}
		if n == 0 {
			return fmt.Errorf("read answers of job %s: %d of %d read, then none came", job, got, want)
		}
		got += n
	}
	return nil
}

// StreamJudgments caches LLM judgments across jobs, by content: one
// message per cache key, the first one stored wins.
const StreamJudgments = "EVALGATE_JUDGMENTS"

const prefixJudgment = "evalgate.judgment."

// JudgmentCache returns the cache of LLM judgments.
func (c *Conn) JudgmentCache() judging.Cache { return judgmentCache{c} }

type judgmentCache struct{ c *Conn }

// Get reads the judgment cached under key.
func (j judgmentCache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	data, err := j.c.lastMessage(ctx, StreamJudgments, prefixJudgment+key)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// Put caches a judgment unless one is cached under key.
func (j judgmentCache) Put(ctx context.Context, key string, data []byte) error {
	msg := &nats.Msg{Subject: prefixJudgment + key, Data: data}
	err := j.c.retry(ctx, "cache judgment", attemptTimeout, func(ctx context.Context) error {
		_, err := j.c.js.PublishMsg(ctx, msg, jetstream.WithMsgID(key))
		return err
	})
	if err != nil && !isSubjectFull(err) {
		return fmt.Errorf("cache judgment %s: %w", key, j.c.explain(err))
	}
	return nil
}
