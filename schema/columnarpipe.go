package schema

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow/go/v16/arrow"
)

// unitSource is a recordSource whose records come in units (the record
// batches of an Arrow IPC file, the row groups of a Parquet file) that can
// be read independently and concurrently.
type unitSource interface {
	recordSource
	numUnits() int
	// readUnit returns the records of unit i, owned by the caller. On an
	// error it returns the records read before it. It may panic on corrupt
	// input (the caller recovers).
	readUnit(ctx context.Context, i int) ([]arrow.Record, error)
}

// normalized is one record of the file after normalize: its rows, or why
// it could not be read or converted. Error rows count from 1 at the
// record's first row; the reader rebases them.
type normalized struct {
	out     arrow.Record
	rows    int64
	form    Form
	errs    ErrorList
	err     error // the record cannot be converted (at its first row)
	readErr error // the file could not be read further
}

func (n *normalized) release() {
	if n.out != nil {
		n.out.Release()
		n.out = nil
	}
}

// pipeJob is one unit in flight: read (when rec is nil) and normalized by
// a worker; done receives the results.
type pipeJob struct {
	unit int
	rec  arrow.Record // a record the producer read (sequential sources)
	done chan []normalized
}

// pipeline reads and normalizes a columnar file's units in parallel, at
// most a few per worker in flight, and hands them back in file order.
type pipeline struct {
	cancel context.CancelFunc
	order  chan pipeJob
	wg     sync.WaitGroup
}

// startPipeline starts the producer and workers goroutines; stop waits
// for them.
func (r *columnarReader) startPipeline(workers int) {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pipeline{cancel: cancel, order: make(chan pipeJob, workers)}
	work := make(chan pipeJob, workers)
	for w := 0; w < workers; w++ {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for job := range work {
				if ctx.Err() != nil {
					if job.rec != nil {
						job.rec.Release()
					}
					job.done <- nil
					continue
				}
				job.done <- r.process(ctx, job)
			}
		}()
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(p.order)
		defer close(work)
		r.produce(ctx, p.order, work)
	}()
	r.pipe = p
}

// produce hands every unit (or, for a sequential source, every record it
// reads) to the workers, in order.
func (r *columnarReader) produce(ctx context.Context, order, work chan<- pipeJob) {
	send := func(job pipeJob) bool {
		select {
		case order <- job:
		case <-ctx.Done():
			if job.rec != nil {
				job.rec.Release()
			}
			return false
		}
		select {
		case work <- job:
			return true
		case <-ctx.Done():
			if job.rec != nil {
				job.rec.Release()
			}
			job.done <- nil
			return false
		}
	}
	if us, ok := r.src.(unitSource); ok {
		for i := 0; i < us.numUnits(); i++ {
			if !send(pipeJob{unit: i, done: make(chan []normalized, 1)}) {
				return
			}
		}
		return
	}
	for {
		var rec arrow.Record
		err := protect(func() error {
			var err error
			rec, err = r.src.next()
			return err
		})
		if err == io.EOF {
			return
		}
		done := make(chan []normalized, 1)
		if err != nil {
			done <- []normalized{{readErr: err}}
			select {
			case order <- pipeJob{done: done}:
			case <-ctx.Done():
			}
			return
		}
		rec.Retain() // the source's record is valid until its next read
		if !send(pipeJob{rec: rec, done: done}) {
			return
		}
	}
}

// process reads a job's records and normalizes them.
func (r *columnarReader) process(ctx context.Context, job pipeJob) []normalized {
	var recs []arrow.Record
	var readErr error
	if job.rec != nil {
		recs = []arrow.Record{job.rec}
	} else {
		readErr = protect(func() error {
			var err error
			recs, err = r.src.(unitSource).readUnit(ctx, job.unit)
			return err
		})
	}
	out := make([]normalized, 0, len(recs)+1)
	for _, rec := range recs {
		out = append(out, r.normalizeRecord(rec))
		rec.Release()
	}
	if readErr != nil {
		out = append(out, normalized{readErr: readErr})
	}
	return out
}

// normalizeRecord converts one record, with error rows counted from 1.
func (r *columnarReader) normalizeRecord(rec arrow.Record) normalized {
	res := normalized{rows: rec.NumRows()}
	if res.rows == 0 {
		return res
	}
	res.errs.Limit = r.errs.Limit
	err := protect(func() error {
		var err error
		res.out, res.form, err = r.normalize(rec, 1, &res.errs)
		return err
	})
	if err != nil {
		res.release()
		// A missing column or a column of the wrong type is a problem of
		// the file's schema, not corruption: keep its kind.
		if !errors.Is(err, ErrMissingColumn) && !errors.Is(err, ErrTypeMismatch) {
			err = fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		res.err = err
	}
	return res
}

// nextNormalized returns the next record's result in file order, false
// at the end.
func (r *columnarReader) nextNormalized(ctx context.Context) (normalized, bool, error) {
	for len(r.pending) == 0 {
		var job pipeJob
		var ok bool
		select {
		case job, ok = <-r.pipe.order:
		case <-ctx.Done():
			return normalized{}, false, ctx.Err()
		}
		if !ok {
			return normalized{}, false, nil
		}
		select {
		case r.pending = <-job.done:
		case <-ctx.Done():
			r.orphan = job.done
			return normalized{}, false, ctx.Err()
		}
	}
	res := r.pending[0]
	r.pending = r.pending[1:]
	return res, true, nil
}

// stopPipeline cancels the pipeline, waits for its goroutines and
// releases every record they made that was not handed out.
func (r *columnarReader) stopPipeline() {
	p := r.pipe
	if p == nil {
		return
	}
	r.pipe = nil
	p.cancel()
	drop := func(rs []normalized) {
		for i := range rs {
			rs[i].release()
		}
	}
	drop(r.pending)
	r.pending = nil
	if r.orphan != nil {
		drop(<-r.orphan)
		r.orphan = nil
	}
	for job := range p.order {
		drop(<-job.done)
	}
	p.wg.Wait()
}

// rebase moves the rows of errors counted from 1 to count from first.
func (l *ErrorList) rebase(first int64) {
	for _, e := range l.errs {
		if e.Row > 0 {
			e.Row += first - 1
		}
	}
}
