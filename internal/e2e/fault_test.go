package e2e

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/evalgate/evalgate/coordinator"
	"github.com/evalgate/evalgate/internal/embedded"
	"github.com/evalgate/evalgate/internal/jsq"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/shard"
	"github.com/evalgate/evalgate/worker"
)

// small is a distributed run with many small tasks, so faults land mid-job.
var small = coordinator.DistOptions{Shards: 7, PartBytes: 16 << 10, ReconcileEvery: time.Second}

// workerProc starts an `evalgate worker` process.
func workerProc(t testing.TB, url string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(evalgateBin, "--log-level", "info", "--log-format", "json", "worker", "--nats", url, "--concurrency", "1")
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			t.Logf("worker %d stderr:\n%s", cmd.Process.Pid, stderr.String())
		}
	})
	return cmd
}

func killedBySIGKILL(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// TestWorkerKilledMidShard: a worker process dies by SIGKILL while scoring
// its first task. The task comes back after the ack wait, another worker
// scores it, and the summary has the same bits.
func TestWorkerKilledMidShard(t *testing.T) {
	gold, run := genData(t, 1500, schema.FormatTREC, false)
	want := reference(t, newJob(t, gold, run))
	s := startServer(t)
	q := connect(t, s, "coordinator")

	doomed := workerProc(t, s.ClientURL(), "EVALGATE_TEST_FAULT=kill-during-score=1")
	type result struct {
		out *coordinator.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := coordinator.RunDistributed(context.Background(), newJob(t, gold, run), q, small)
		done <- result{out, err}
	}()
	if err := doomed.Wait(); !killedBySIGKILL(err) {
		t.Fatalf("the doomed worker did not die by SIGKILL: %v", err)
	}
	workerProc(t, s.ClientURL()) // the survivor
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := comparable(t, r.out.Summary); got != want {
		t.Fatalf("summary after a worker crash differs:\n%s\nwant\n%s", got, want)
	}
}

// TestDuplicateScoringCountedOnce: every result published twice (as a
// duplicate publish or a redelivery produces) is counted once.
func TestDuplicateScoringCountedOnce(t *testing.T) {
	gold, run := genData(t, 1200, schema.FormatJSONL, true)
	want := reference(t, newJob(t, gold, run))
	s := startServer(t)
	plan := &worker.FaultPlan{ScoreTwice: true}
	startWorkers(t, s, 2, plan)
	out, err := coordinator.RunDistributed(context.Background(), newJob(t, gold, run), connect(t, s, "coordinator"), small)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Duplicates.Load() == 0 {
		t.Fatal("no duplicate result was ever published: the test did not exercise the check")
	}
	if got := comparable(t, out.Summary); got != want {
		t.Fatal("summary with duplicate results differs from score's")
	}
}

// TestLateAckAfterRedelivery: workers stall after storing a result and ack
// after the ack wait, so every task goes to another worker meanwhile, which
// finds the stored result equal to its own. One task is slow, so the job is
// still collecting when the duplicates happen. Each counts once.
func TestLateAckAfterRedelivery(t *testing.T) {
	gold, run := genData(t, 300, schema.FormatTREC, false)
	want := reference(t, newJob(t, gold, run))
	s := startServer(t)
	plan := &worker.FaultPlan{StallAfterPublish: testTopology.AckWait + time.Second,
		SlowTask: "000001-0000", SlowFor: 2*testTopology.AckWait + 2*time.Second}
	startWorkers(t, s, 2, plan)
	opts := small
	opts.Shards, opts.PartBytes = 2, 1<<20 // two tasks, 000000-0000 and 000001-0000
	out, err := coordinator.RunDistributed(context.Background(), newJob(t, gold, run), connect(t, s, "coordinator"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Duplicates.Load() == 0 {
		t.Fatal("the task was not scored again after the ack wait: the test did not exercise a late ack")
	}
	if got := comparable(t, out.Summary); got != want {
		t.Fatal("summary with a late ack differs from score's")
	}
}

// TestDeterminismMismatchFailsJob: a second result that differs from the
// stored one fails the job loudly.
func TestDeterminismMismatchFailsJob(t *testing.T) {
	gold, run := genData(t, 300, schema.FormatTREC, false)
	s := startServer(t)
	startWorkers(t, s, 1, &worker.FaultPlan{ScoreTwice: true, CorruptSecond: true})
	_, err := coordinator.RunDistributed(context.Background(), newJob(t, gold, run), connect(t, s, "coordinator"), small)
	if !errors.Is(err, coordinator.ErrTaskFailed) || !strings.Contains(err.Error(), "determinism check failed") {
		t.Fatalf("err = %v, want a determinism failure", err)
	}
}

// TestDeterminismMismatchOnLastTaskFailsJob: a one-task job whose worker
// scores the task twice and gets a different second result. The first
// result completes the job's results before the mismatch is reported, so
// the coordinator must wait for the queue to release the task and find the
// failure before it declares success.
func TestDeterminismMismatchOnLastTaskFailsJob(t *testing.T) {
	gold, run := genData(t, 300, schema.FormatTREC, false)
	opts := small
	opts.Shards, opts.PartBytes = 1, 1<<20 // one task: 000000-0000
	for i := 0; i < 3; i++ {
		s := startServer(t)
		startWorkers(t, s, 1, &worker.FaultPlan{ScoreTwice: true, CorruptSecond: true})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := coordinator.RunDistributed(ctx, newJob(t, gold, run), connect(t, s, "coordinator"), opts)
		cancel()
		if !errors.Is(err, coordinator.ErrTaskFailed) || !strings.Contains(err.Error(), "determinism check failed") ||
			!strings.Contains(err.Error(), "task 000000-0000") {
			t.Fatalf("run %d: err = %v, want a determinism failure of task 000000-0000", i, err)
		}
	}
}

// TestServerRestartMidJob restarts the JetStream server (file store) while
// the job runs; clients reconnect and the job finishes with the same bits.
func TestServerRestartMidJob(t *testing.T) {
	gold, run := genData(t, 3000, schema.FormatJSONL, true)
	want := reference(t, newJob(t, gold, run))
	s := startServer(t)
	startWorkers(t, s, 2, nil)
	opts := small
	var once sync.Once
	restarted := false
	opts.AfterPartial = func(n int) {
		if n >= 3 {
			once.Do(func() {
				if err := s.Restart(); err != nil {
					t.Errorf("restart: %v", err)
				}
				restarted = true
			})
		}
	}
	out, err := coordinator.RunDistributed(context.Background(), newJob(t, gold, run), connect(t, s, "coordinator"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !restarted {
		t.Fatal("the server was never restarted")
	}
	if got := comparable(t, out.Summary); got != want {
		t.Fatal("summary across a server restart differs from score's")
	}
}

// TestServerRestartDuringIngest takes the JetStream server (file store)
// down while the coordinator is still publishing tasks, keeps it down until
// one of the coordinator's calls has failed (a publish times out), then
// starts it again: the coordinator retries, and the job finishes with the
// same bits.
func TestServerRestartDuringIngest(t *testing.T) {
	gold, run := genData(t, 3000, schema.FormatJSONL, true)
	want := reference(t, newJob(t, gold, run))
	s := startServer(t)
	startWorkers(t, s, 2, nil)
	q := connect(t, s, "coordinator")
	opts := small
	opts.PublishConcurrency = 1 // the only publisher waits in the hook while the server goes down
	published, down := make(chan struct{}), make(chan struct{})
	var once sync.Once
	opts.AfterPublish = func(string, bool) {
		once.Do(func() {
			close(published)
			<-down
		})
	}
	defer func() {
		select {
		case <-down:
		default:
			close(down)
		}
	}()
	done := runAsync(context.Background(), newJob(t, gold, run), q, opts)
	select {
	case <-published:
	case r := <-done:
		t.Fatalf("job ended before publishing a task: %v", r.err)
	}
	s.Shutdown()
	close(down)
	var r jobResult
	ended := false
	waitFor(t, time.Minute, "a retried call", func() bool {
		select {
		case r = <-done:
			ended = true
			return true
		default:
			return q.Retries() > 0
		}
	})
	if ended {
		t.Fatalf("the job ended while the server was down: %v", r.err)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	r = <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := comparable(t, r.out.Summary); got != want {
		t.Fatal("summary across a server restart during ingest differs from score's")
	}
}

// TestLostTaskRepublishedPromptly: a pending task vanishes from the queue
// (as unsynced writes lost in a server crash would). The coordinator's
// reconcile finds it missing and re-publishes it under a fresh message id:
// the first id is still in the server's 2-minute dedup window, which would
// silently drop a re-publication under the same id. The job finishes well
// inside that window, with the same bits.
func TestLostTaskRepublishedPromptly(t *testing.T) {
	gold, run := genData(t, 1000, schema.FormatTREC, false)
	want := reference(t, newJob(t, gold, run))
	s := startServer(t)
	q := connect(t, s, "coordinator")
	const lost = "000003-0000"
	published := make(chan string, 1)
	var once sync.Once
	opts := small // reconcile every second
	opts.Progress = func(p coordinator.Progress) {
		if p.Tasks > 0 {
			once.Do(func() { published <- p.Job })
		}
	}
	var republished atomic.Int64
	opts.AfterPublish = func(task string, enqueued bool) {
		if task == lost && enqueued {
			republished.Add(1)
		}
	}
	// Well under the dedup window: without a fresh id the job would wait
	// for the window to pass.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	done := runAsync(ctx, newJob(t, gold, run), q, opts)
	var job string
	select {
	case job = <-published: // every task is published; no worker runs yet
	case r := <-done:
		t.Fatalf("job ended before publishing: %v", r.err)
	}
	if err := q.Faults().DropTask(context.Background(), job, lost); err != nil {
		t.Fatal(err)
	}
	startWorkers(t, s, 2, nil)
	r := <-done
	if r.err != nil {
		t.Fatalf("job with a lost task: %v", r.err)
	}
	if n := republished.Load(); n != 2 {
		t.Errorf("task %s enqueued %d times, want 2 (published, then re-published once)", lost, n)
	}
	if got := comparable(t, r.out.Summary); got != want {
		t.Fatal("summary after a lost task differs from score's")
	}
}

// TestCoordinatorKilledAndResumed kills the coordinator process (SIGKILL)
// — after three results, or in the middle of publishing — lets the workers
// finish what they hold and stops them, so the job is left with results,
// pending tasks and (when killed during ingest) tasks never published.
// Resuming the job from its id must publish exactly the tasks without a
// stored result (enqueueing those not pending), reuse the stored results
// without adding them to the sum twice, and give the single-process bits.
func TestCoordinatorKilledAndResumed(t *testing.T) {
	gold, run := genData(t, 2000, schema.FormatTREC, false) // one task per shard
	want := reference(t, newJob(t, gold, run))
	measures := strings.Join(metricNames(), ",")
	for _, c := range []struct {
		name  string
		crash string
		plan  *worker.FaultPlan
	}{
		// Slow scoring keeps most tasks unscored when the coordinator dies.
		{"after results", "EVALGATE_TEST_COORDINATOR_CRASH_AFTER=3", &worker.FaultPlan{SlowTask: "*", SlowFor: 50 * time.Millisecond}},
		{"during ingest", "EVALGATE_TEST_COORDINATOR_CRASH_AFTER_PUBLISH=4", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := startServer(t)
			q := connect(t, s, "resumer")
			stopWorkers := startWorkers(t, s, 1, c.plan)
			first := exec.Command(evalgateBin, "run", "--nats", s.ClientURL(), "--workers", "0", "--gold", gold, "--run", run,
				"-m", measures, "--shards", "16", "--progress", "off", "-f", "json")
			first.Env = append(os.Environ(), c.crash)
			var firstErr bytes.Buffer
			first.Stderr = &firstErr
			if err := first.Run(); !killedBySIGKILL(err) {
				t.Fatalf("the coordinator did not die by SIGKILL: %v\n%s", err, firstErr.String())
			}
			jobs, err := q.ListManifests(context.Background())
			if err != nil || len(jobs) != 1 {
				t.Fatalf("jobs after the crash: %v, %v", jobs, err)
			}
			id := jobs[0].Job
			// The workers go on without the coordinator; wait for a few
			// results, then stop them (they settle what they hold).
			waitFor(t, time.Minute, "three results", func() bool {
				c, err := q.Counts(context.Background(), id)
				return err == nil && c.Done >= 3
			})
			stopWorkers()
			before, err := q.Tasks(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}

			var mu sync.Mutex
			published, enqueued := map[string]bool{}, map[string]bool{}
			opts, ready := publishedJob(coordinator.DistOptions{Resume: id})
			opts.AfterPublish = func(task string, enq bool) {
				mu.Lock()
				defer mu.Unlock()
				if published[task] {
					t.Errorf("task %s published twice", task)
				}
				published[task] = true
				if enq {
					enqueued[task] = true
				}
			}
			done := runAsync(context.Background(), coordinator.Job{Logger: logger(t)}, q, opts)
			select {
			case <-ready: // the resumed job published its tasks; now score them
			case r := <-done:
				t.Fatalf("resumed job ended before publishing: %v", r.err)
			}
			startWorkers(t, s, 2, nil)
			r := <-done
			if r.err != nil {
				t.Fatalf("resume: %v", r.err)
			}
			if got := comparable(t, r.out.Summary); got != want {
				t.Fatalf("resumed summary differs:\n%s\nwant\n%s", got, want)
			}

			m, err := q.GetManifest(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			for sh, n := range m.Parts {
				for p := 0; p < n; p++ {
					all = append(all, coordinator.TaskID(shard.ID(sh), p, m.Regrouped))
				}
			}
			had, pending := set(before.Done), set(before.Pending)
			var wantPublished, wantEnqueued []string
			for _, task := range all {
				if !had[task] {
					wantPublished = append(wantPublished, task)
					if !pending[task] {
						wantEnqueued = append(wantEnqueued, task)
					}
				}
			}
			if len(before.Done) == 0 || len(wantPublished) == 0 {
				t.Fatalf("at resume %d of %d tasks had a result: the resume had nothing to reuse or nothing to do", len(before.Done), len(all))
			}
			if got := slices.Sorted(maps.Keys(published)); !slices.Equal(got, wantPublished) {
				t.Errorf("resume published %v\nwant the tasks without a result %v", got, wantPublished)
			}
			if got := slices.Sorted(maps.Keys(enqueued)); !slices.Equal(got, wantEnqueued) {
				t.Errorf("resume enqueued %v\nwant those neither done nor pending %v", got, wantEnqueued)
			}
			t.Logf("%d tasks: %d had a result, %d pending; resume published %d, enqueued %d",
				len(all), len(before.Done), len(before.Pending), len(published), len(enqueued))
			counts, err := q.Counts(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if counts.Done != m.Tasks || m.Tasks != len(all) || m.State != coordinator.StateDone {
				t.Fatalf("job %s: %d results for %d tasks, state %s", id, counts.Done, m.Tasks, m.State)
			}
		})
	}
}

func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// TestWorkerRegistryAcrossServerRestart: the worker registry (heartbeats)
// survives a restart of the server (file store), so the coordinator's
// worker count and `evalgate status` keep working; and when the registry
// is gone anyway (as the memory bucket of earlier versions was after a
// restart), listing workers reports none instead of failing, and the
// workers' heartbeats create it again.
func TestWorkerRegistryAcrossServerRestart(t *testing.T) {
	s := startServer(t)
	startWorkers(t, s, 2, nil)
	q := connect(t, s, "coordinator")
	ctx := context.Background()
	twoWorkers := func() bool {
		n, err := q.WorkerCount(ctx)
		if err != nil {
			t.Fatalf("count workers: %v", err)
		}
		return n == 2
	}
	waitFor(t, 10*time.Second, "two workers", twoWorkers)

	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if !twoWorkers() { // the heartbeats were stored in the file store
		n, _ := q.WorkerCount(ctx)
		t.Fatalf("after a restart %d workers are seen, want 2", n)
	}
	out, errs, code := cli(t, "status", "--nats", s.ClientURL())
	if code != 0 || !strings.Contains(out, "workers seen in the last 30s: 2") {
		t.Fatalf("status after a restart: exit %d\n%s\n%s", code, out, errs)
	}

	if err := q.Faults().DropWorkerRegistry(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := q.WorkerCount(ctx); err != nil {
		t.Fatalf("count workers without a registry: %v", err)
	}
	waitFor(t, 10*time.Second, "the heartbeats to recreate the registry", twoWorkers)
}

// TestPoisonTaskFailsJob: a task on which every attempt fails makes the
// job fail after MaxDeliver attempts, naming the task and the error.
func TestPoisonTaskFailsJob(t *testing.T) {
	gold, run := genData(t, 1000, schema.FormatTREC, false)
	s := startServer(t)
	startWorkers(t, s, 2, &worker.FaultPlan{FailTask: "000003-0000", FailReason: "model server returned 500"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := coordinator.RunDistributed(ctx, newJob(t, gold, run), connect(t, s, "coordinator"), small)
	if !errors.Is(err, coordinator.ErrTaskFailed) {
		t.Fatalf("err = %v, want ErrTaskFailed", err)
	}
	for _, frag := range []string{"000003-0000", "shard 000003", "model server returned 500", "3 deliveries"} {
		if !strings.Contains(err.Error(), frag) {
			t.Errorf("error %q does not mention %q", err, frag)
		}
	}
}

// TestNoWorkersWaitsThenTimesOut: a coordinator without workers says it is
// waiting for them and honours --timeout.
func TestNoWorkersWaitsThenTimesOut(t *testing.T) {
	gold, run := genData(t, 100, schema.FormatTREC, false)
	s := startServer(t)
	connect(t, s, "setup")
	cmd := exec.Command(evalgateBin, "run", "--nats", s.ClientURL(), "--workers", "0", "--gold", gold, "--run", run,
		"--timeout", "5s", "--progress", "off")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit: %v, want code 3\n%s", err, errb.String())
	}
	for _, frag := range []string{"waiting for workers", "timed out after 5s"} {
		if !strings.Contains(errb.String(), frag) {
			t.Errorf("stderr lacks %q:\n%s", frag, errb.String())
		}
	}
}

// TestUnauthenticatedClientRefused: a server that requires credentials
// refuses clients without them (or with wrong ones) at once, with a clear
// error. (In-process connections, which only evalgate's own commands make
// with the credentials they configured, report the same error but only
// after the server's 10s write deadline; see jsq.connectError.)
func TestUnauthenticatedClientRefused(t *testing.T) {
	srv, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1",
		User: "evalgate", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	ctx := context.Background()
	for name, o := range map[string]jsq.Options{
		"tcp, no credentials":        {URL: srv.ClientURL()},
		"tcp, wrong password":        {URL: srv.ClientURL(), User: "evalgate", Password: "guess"},
		"in-process, no credentials": {InProcess: srv},
	} {
		c, err := jsq.Connect(ctx, o)
		if err == nil {
			c.Close()
			t.Errorf("%s: connected", name)
			continue
		}
		if !errors.Is(err, jsq.ErrUnauthorized) {
			t.Errorf("%s: %v, want ErrUnauthorized", name, err)
		}
	}
	c, err := jsq.Connect(ctx, jsq.Options{URL: srv.ClientURL(), User: "evalgate", Password: "s3cret"})
	if err != nil {
		t.Fatalf("right credentials: %v", err)
	}
	c.Close()
}

// objectStoreServer starts a server whose max payload (64 KiB) is below
// the object store's default chunk size (128 KiB). With objectStoreOpts and
// 4000 queries, tasks of about 2000 queries (110 KiB encoded) do not travel
// inline, and their objects must be stored in smaller chunks.
func objectStoreServer(t *testing.T) (*embedded.Server, *jsq.Conn) {
	t.Helper()
	srv, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1", MaxPayload: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	q := connect(t, srv, "coordinator")
	if q.MaxPayload() != 64<<10 {
		t.Fatalf("max payload %d", q.MaxPayload())
	}
	return srv, q
}

var objectStoreOpts = coordinator.DistOptions{Shards: 2, PartBytes: 1 << 20}

// publishedJob returns DistOptions whose Progress sends the job id once
// every task is published.
func publishedJob(o coordinator.DistOptions) (coordinator.DistOptions, <-chan string) {
	published := make(chan string, 1)
	var once sync.Once
	o.Progress = func(p coordinator.Progress) {
		if p.Tasks > 0 {
			once.Do(func() { published <- p.Job })
		}
	}
	return o, published
}

// TestLargeTasksGoThroughObjectStore: with a max payload below the object
// store's default chunk size, tasks too large to travel inline are stored
// as objects in chunks the server accepts (digest checked by the worker),
// every task goes that way, and the summary has the same bits. The objects
// are removed when the job ends.
func TestLargeTasksGoThroughObjectStore(t *testing.T) {
	gold, run := genData(t, 4000, schema.FormatTREC, false)
	want := reference(t, newJob(t, gold, run))
	srv, q := objectStoreServer(t)
	opts, published := publishedJob(objectStoreOpts)
	done := runAsync(context.Background(), newJob(t, gold, run), q, opts)
	var job string
	select {
	case job = <-published: // no worker yet: every payload object is still there
	case r := <-done:
		t.Fatalf("job ended before publishing: %v", r.err)
	}
	objects, err := q.PayloadObjects(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	m, err := q.GetManifest(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if len(objects) == 0 || len(objects) != m.Tasks {
		t.Fatalf("%d payload objects for %d tasks, want one per task", len(objects), m.Tasks)
	}
	startWorkers(t, srv, 2, nil)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := comparable(t, r.out.Summary); got != want {
		t.Fatal("summary through the object store differs from score's")
	}
	if objects, err := q.PayloadObjects(context.Background(), job); err != nil || len(objects) != 0 {
		t.Fatalf("payload objects left after the job: %v, %v", objects, err)
	}
}

// TestCorruptPayloadObjectFailsJob: a payload object whose bytes no longer
// match — replaced by other bytes (the task's digest catches it), or with a
// chunk altered (the object store's own digest catches it) — is corrupt
// input: the worker records a final failure on the first delivery and
// terminates the task, and the job fails at once naming the task.
func TestCorruptPayloadObjectFailsJob(t *testing.T) {
	gold, run := genData(t, 4000, schema.FormatTREC, false)
	for _, c := range []struct {
		name    string
		corrupt func(jsq.Faults, string, string) error
		reason  string
	}{
		{"replaced", func(f jsq.Faults, job, task string) error {
			return f.ReplacePayload(context.Background(), job, task)
		}, "payload digest"},
		{"chunk altered", func(f jsq.Faults, job, task string) error {
			return f.CorruptPayloadChunk(context.Background(), job, task)
		}, "digests do not match"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, q := objectStoreServer(t)
			opts, published := publishedJob(objectStoreOpts)
			// Far below what MaxDeliver retries would take.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			done := runAsync(ctx, newJob(t, gold, run), q, opts)
			var job string
			select {
			case job = <-published:
			case r := <-done:
				t.Fatalf("job ended before publishing: %v", r.err)
			}
			const task = "000001-0000"
			if err := c.corrupt(q.Faults(), job, task); err != nil {
				t.Fatal(err)
			}
			startWorkers(t, srv, 1, nil)
			r := <-done
			if !errors.Is(r.err, coordinator.ErrTaskFailed) {
				t.Fatalf("err = %v, want ErrTaskFailed", r.err)
			}
			for _, frag := range []string{"task " + task, "after 1 deliveries", "corrupt payload", c.reason} {
				if !strings.Contains(r.err.Error(), frag) {
					t.Errorf("error %q does not mention %q", r.err, frag)
				}
			}
		})
	}
}
