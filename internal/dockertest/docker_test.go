//go:build docker

package dockertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/evalgate/evalgate/internal/jsq"
	"github.com/evalgate/evalgate/internal/telemetry"
	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/summary"
	"github.com/evalgate/evalgate/synth"
)

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Passwords of the cluster's NATS users.
var passwords = map[jsq.Role]string{
	jsq.RoleCoordinator: "dockertest-coordinator", jsq.RoleWorker: "dockertest-worker", jsq.RoleStatus: "dockertest-status"}

// cluster is the docker-compose project of one test run: its own project
// name and image tag, so that runs of other worktrees on the same Docker
// engine do not meet it.
type cluster struct {
	t       *testing.T
	root    string
	project string
	image   string
	env     []string
	start   time.Time
}

func (c *cluster) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command("docker-compose", append([]string{"-p", c.project, "-f", filepath.Join(c.root, "docker-compose.yml")}, args...)...)
	cmd.Dir = c.root
	cmd.Env = append(os.Environ(), c.env...)
	return cmd
}

func (c *cluster) run(args ...string) string {
	c.t.Helper()
	var out, errb bytes.Buffer
	cmd := c.cmd(args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("docker-compose %s: %v\n%s\n%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// phase logs how long the test has run, to keep CI's budget in sight.
func (c *cluster) phase(what string) {
	c.t.Logf("%6.1fs  %s", time.Since(c.start).Seconds(), what)
}

func docker(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func sh(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// containers lists the ids of a service's running containers.
func (c *cluster) containers(service string) []string {
	c.t.Helper()
	out := docker(c.t, "ps", "-q", "--filter", "label=com.docker.compose.project="+c.project,
		"--filter", "label=com.docker.compose.service="+service, "--filter", "label=com.docker.compose.oneoff=False")
	return strings.Fields(out)
}

// network is the project's network.
func (c *cluster) network() string { return c.project + "_default" }

// ip is a container's address on the project's network, reachable from
// this host.
func (c *cluster) ip(container string) string {
	c.t.Helper()
	return docker(c.t, "inspect", "-f", `{{with index .NetworkSettings.Networks "`+c.network()+`"}}{{.IPAddress}}{{end}}`, container)
}

// natsURL names the three JetStream nodes by address, for clients on this
// host.
func (c *cluster) natsURL() string {
	var urls []string
	for _, s := range []string{"nats1", "nats2", "nats3"} {
		for _, id := range c.containers(s) {
			urls = append(urls, "nats://"+c.ip(id)+":4222")
		}
	}
	return strings.Join(urls, ",")
}

// connect connects from this host as one of the cluster's users.
func (c *cluster) connect(r jsq.Role) (*jsq.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return jsq.Connect(ctx, jsq.Options{URL: c.natsURL(), User: string(r), Password: passwords[r],
		Logger: zerolog.New(zerolog.NewTestWriter(c.t)).Level(zerolog.WarnLevel)})
}

// workerMetrics scrapes a worker container's /metrics: each sample by its
// series ("name{labels}").
func (c *cluster) workerMetrics(container string) (map[string]float64, error) {
	client := http.Client{Timeout: 3 * time.Second}
	resp, err := client.Get(fmt.Sprintf("http://%s:%d%s", c.ip(container), telemetry.Port, telemetry.PathMetrics))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", line, err)
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// sum adds up one series over the workers' scrapes.
func sum(scrapes map[string]map[string]float64, series string) float64 {
	n := 0.0
	for _, m := range scrapes {
		n += m[series]
	}
	return n
}

// scrapeWorkers scrapes every worker container.
func (c *cluster) scrapeWorkers() map[string]map[string]float64 {
	c.t.Helper()
	out := map[string]map[string]float64{}
	for _, id := range c.containers("worker") {
		m, err := c.workerMetrics(id)
		if err != nil {
			c.t.Fatalf("scrape worker %s: %v", id, err)
		}
		out[id] = m
	}
	return out
}

// sameResults compares two summaries on everything but file paths and
// execution.
func sameResults(t *testing.T, got, want *summary.Summary) {
	t.Helper()
	strip := func(s *summary.Summary) string {
		c := *s.Comparable()
		c.Inputs.Gold.Path, c.Inputs.Run.Path = "", ""
		b, _ := json.Marshal(&c)
		return string(b)
	}
	if a, b := strip(got), strip(want); a != b {
		t.Fatalf("cluster summary differs from single-process scoring:\n%s\nwant\n%s", a, b)
	}
}

// job is a coordinator container running a job.
type job struct {
	cmd      *exec.Cmd
	out, err bytes.Buffer
	exited   chan error
}

const measures = "R@5,R@10,P@5,RR,nDCG@10,AP,Success@5,Judged@10,NumQ,NumRel,NumRet"

// startJob starts a coordinator container running a job on the data.
func (c *cluster) startJob() *job {
	c.t.Helper()
	j := &job{exited: make(chan error, 1)}
	j.cmd = c.cmd("run", "--rm", "-T", "coordinator", "run", "--gold", "/data/gold.jsonl", "--run", "/data/run.jsonl",
		"-m", measures, "--replicas", "3", "--shards", "16", "--part-bytes", "262144", "--progress", "off",
		"--timeout", "5m", "-f", "json")
	j.cmd.Stdout, j.cmd.Stderr = &j.out, &j.err
	if err := j.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	go func() { j.exited <- j.cmd.Wait() }()
	return j
}

// wait waits for the job's end and returns its summary.
func (j *job) wait(t *testing.T) *summary.Summary {
	t.Helper()
	if err := <-j.exited; err != nil {
		t.Fatalf("coordinator: %v\n%s", err, j.err.String())
	}
	s, err := summary.ReadJSON(&j.out)
	if err != nil {
		t.Fatalf("coordinator output: %v\n%s\n%s", err, j.out.String(), j.err.String())
	}
	return s
}

// newJobID waits until a job other than those in seen appears and returns
// it, failing if the coordinator j exits first.
func newJobID(t *testing.T, status *jsq.Conn, j *job, seen map[string]bool) string {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		select {
		case err := <-j.exited:
			t.Fatalf("the job ended (%v) before it was seen:\n%s", err, j.err.String())
		default:
		}
		ms, err := status.ListManifests(context.Background())
		if err != nil {
			continue
		}
		for _, m := range ms {
			if !seen[m.Job] {
				return m.Job
			}
		}
	}
	t.Fatalf("the job never appeared:\n%s", j.err.String())
	return ""
}

// jobIDs is the set of jobs the cluster knows.
func jobIDs(t *testing.T, status *jsq.Conn) map[string]bool {
	t.Helper()
	ms, err := status.ListManifests(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range ms {
		out[m.Job] = true
	}
	return out
}

// TestCluster runs evalgate as docker-compose.yml deploys it — three
// JetStream nodes, two workers, coordinator and status containers, each
// NATS user with least privilege — and checks:
//
//   - a worker user is refused a purge of the task stream, and a worker
//     with a wrong password exits non-zero within 10 s naming the
//     authentication failure;
//   - a healthy job gives the single-process bits, and the workers'
//     metrics moved by the job's tasks and queries;
//   - a worker cut off the network in the middle of a task, then
//     reconnected: the task goes to the other worker, both may store a
//     result, the first one counts: the same bits;
//   - a JetStream node and both workers killed mid-job: the same bits.
//
// One task of every job is slow (EVALGATE_TEST_FAULT), so a job stays open
// while the test acts on it; a short ack wait brings back the tasks of a
// worker that died or was cut off.
func TestCluster(t *testing.T) {
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Skip("docker-compose not installed")
	}
	root := repoRoot(t)
	id := strconv.Itoa(os.Getpid())
	const slowTask, slowFor = "000005-0000", 12 * time.Second
	c := &cluster{t: t, root: root, project: "evalgatedt" + id, image: "evalgate:dockertest-" + id, start: time.Now()}
	data := t.TempDir()
	c.env = []string{"EVALGATE_IMAGE=" + c.image, "EVALGATE_DATA=" + data, "EVALGATE_ACK_WAIT=5s",
		"EVALGATE_TEST_FAULT=slow-task=" + slowTask + ":" + slowFor.String()}
	for r, p := range passwords {
		c.env = append(c.env, jsq.PasswordEnv(r)+"="+p)
	}
	// Everything the test starts goes, also on failure: the project's
	// containers (one-off ones too), network and volumes, and the image.
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := c.cmd("logs", "--no-color", "--tail", "40").CombinedOutput()
			t.Logf("cluster logs:\n%s", logs)
		}
		_ = c.cmd("down", "-v", "--remove-orphans", "-t", "5").Run()
		if out, _ := exec.Command("docker", "ps", "-aq", "--filter", "label=com.docker.compose.project="+c.project).Output(); len(bytes.TrimSpace(out)) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-f"}, strings.Fields(string(out))...)...).Run()
		}
		_ = exec.Command("docker", "rmi", "-f", c.image).Run()
		c.phase("torn down")
	})
	sh(t, root, []string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-o", "bin/evalgate-linux", "./cmd/evalgate")
	sh(t, root, nil, "docker", "build", "-q", "-t", c.image, ".")
	c.phase("image built")

	gold, run := synth.Paths(data, schema.FormatJSONL)
	if err := synth.Write(context.Background(), synth.Options{Queries: 8000, Depth: 100, Seed: 3, Format: schema.FormatJSONL, Tags: true}, gold, run); err != nil {
		t.Fatal(err)
	}
	// The reference is single-process scoring by the same binary, with
	// the same flags: what a user would compare the cluster against.
	var refOut, refErr bytes.Buffer
	score := exec.Command(filepath.Join(root, "bin", "evalgate-linux"), "score", "--gold", gold, "--run", run, "-m", measures, "-f", "json")
	score.Stdout, score.Stderr = &refOut, &refErr
	if err := score.Run(); err != nil {
		t.Fatalf("evalgate score: %v\n%s", err, refErr.String())
	}
	ref, err := summary.ReadJSON(&refOut)
	if err != nil {
		t.Fatalf("evalgate score output: %v", err)
	}
	c.phase("data and reference ready")

	c.run("up", "-d", "--scale", "worker=2", "nats1", "nats2", "nats3", "worker")
	// Ready when the status user connects and sees both workers.
	var status *jsq.Conn
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(500 * time.Millisecond) {
		if status == nil {
			status, _ = c.connect(jsq.RoleStatus)
		}
		if status != nil {
			if n, err := status.WorkerCount(context.Background()); err == nil && n == 2 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the cluster did not come up with two workers")
		}
	}
	defer status.Close()
	c.phase("cluster up")

	t.Run("WorkerRefusedPurge", func(t *testing.T) {
		w, err := c.connect(jsq.RoleWorker)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		err = w.Faults().PurgeTaskStream(ctx)
		if err == nil || !regexp.MustCompile(`(?i)permissions? violation`).MatchString(err.Error()) {
			t.Fatalf("a worker purging %s: %v, want a permissions violation", jsq.StreamTasks, err)
		}
	})

	t.Run("WrongPassword", func(t *testing.T) {
		cmd := c.cmd("run", "--rm", "-T", "-e", "EVALGATE_NATS_PASSWORD=not-the-password", "worker")
		started := time.Now()
		out, err := cmd.CombinedOutput()
		took := time.Since(started)
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Fatalf("a worker with a wrong password: %v after %s\n%s", err, took, out)
		}
		if took > 10*time.Second {
			t.Errorf("a worker with a wrong password took %s to exit, want at most 10s (container start included)", took)
		}
		if !strings.Contains(string(out), "rejected the credentials") || !strings.Contains(strings.ToLower(string(out)), "authorization violation") {
			t.Errorf("the exit does not name the authentication failure:\n%s", out)
		}
	})
	c.phase("refusals checked")

	// A healthy cluster gives the single-process bits, and the workers
	// count the job's work.
	before := c.scrapeWorkers()
	sameResults(t, c.startJob().wait(t), ref)
	after := c.scrapeWorkers()
	for _, series := range []string{`evalgate_worker_tasks_taken_total{kind="score"}`, `evalgate_worker_tasks_done_total{kind="score"}`,
		`evalgate_worker_queries_scored_total{kind="score"}`, `evalgate_worker_task_duration_seconds_count{kind="score"}`} {
		if sum(after, series) <= sum(before, series) {
			t.Errorf("%s did not move during the job: %v before, %v after", series, sum(before, series), sum(after, series))
		}
	}
	if got := sum(after, `evalgate_worker_queries_scored_total{kind="score"}`) - sum(before, `evalgate_worker_queries_scored_total{kind="score"}`); got < 8000 {
		t.Errorf("the workers counted %v queries scored, want at least the job's 8000", got)
	}
	if sum(after, `evalgate_worker_tasks_in_flight{kind="score"}`) != 0 || sum(after, "evalgate_worker_slots") < 2 {
		t.Errorf("after the job: %v tasks in flight, %v slots", sum(after, `evalgate_worker_tasks_in_flight{kind="score"}`), sum(after, "evalgate_worker_slots"))
	}
	c.phase("healthy job done")

	t.Run("NetworkPartition", func(t *testing.T) { partition(t, c, status, ref) })
	c.phase("partition job done")

	// A JetStream node and both workers die mid-job.
	seen := jobIDs(t, status)
	j := c.startJob()
	newJobID(t, status, j, seen)
	c.run("kill", "nats2")
	c.run("kill", "worker")
	c.run("up", "-d", "--scale", "worker=2", "worker")
	sameResults(t, j.wait(t), ref)
	c.phase("node loss job done")
}

// partition cuts a worker off the network while it holds the job's slow
// task, waits until the other worker has the task, and reconnects it. The
// job must give the same bits: whichever stores the task's result first,
// it counts once.
func partition(t *testing.T, c *cluster, status *jsq.Conn, ref *summary.Summary) {
	seen := jobIDs(t, status)
	before := c.scrapeWorkers()
	j := c.startJob()
	job := newJobID(t, status, j, seen)
	// The slow task is the last one left: its holder is the worker with a
	// task in flight.
	const inFlight = `evalgate_worker_tasks_in_flight{kind="score"}`
	var holder, other string
	for deadline := time.Now().Add(time.Minute); holder == ""; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no worker was seen holding the last task of job %s", job)
		}
		m, err := status.GetManifest(context.Background(), job)
		if err != nil || m.Tasks == 0 {
			continue
		}
		jt, err := status.Tasks(context.Background(), job)
		if err != nil || len(jt.Done) != m.Tasks-1 {
			continue
		}
		scrapes := c.scrapeWorkers()
		for id, s := range scrapes {
			if s[inFlight] >= 1 {
				holder = id
			} else {
				other = id
			}
		}
		if holder != "" && other == "" {
			holder = "" // both busy: not yet the last task
		}
	}
	c.phase("cutting off worker " + holder[:12] + " mid-task")
	docker(t, "network", "disconnect", c.network(), holder)
	reconnected := false
	reconnect := sync.OnceFunc(func() {
		docker(t, "network", "connect", c.network(), holder)
		reconnected = true
	})
	defer reconnect()
	// After the ack wait the task goes to the other worker.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		m, err := c.workerMetrics(other)
		if err == nil && m[inFlight] >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the task held by the worker cut off never went to the other worker")
		}
	}
	reconnect()
	c.phase("worker reconnected")
	sameResults(t, j.wait(t), ref)
	if !reconnected {
		t.Fatal("not reconnected")
	}
	// The worker cut off comes back: connected and ready again.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		m, err := c.workerMetrics(holder)
		if err == nil && m["evalgate_nats_connected"] == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker cut off did not reconnect to NATS: %v", err)
		}
	}
	// The job ends with the first result stored; the other attempt
	// settles later: it finds the stored result and compares it (a
	// duplicate), or, if its connection did not come back in time, fails
	// and hands the task back (not a final failure). Either way the task
	// was scored twice and counted once.
	var after map[string]map[string]float64
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		after = c.scrapeWorkers()
		if sum(after, inFlight) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the workers still hold %v tasks a minute after the job", sum(after, inFlight))
		}
	}
	delta := func(series string) float64 { return sum(after, series) - sum(before, series) }
	redelivered := delta(`evalgate_worker_tasks_redelivered_total{kind="score"}`)
	duplicates := delta(`evalgate_worker_tasks_duplicate_total{kind="score"}`)
	failed := delta(`evalgate_worker_tasks_failed_total{final="false",kind="score"}`)
	t.Logf("redelivered %v; the second attempt: %v duplicate (same bytes as the stored result), %v failed and handed back",
		redelivered, duplicates, failed)
	if redelivered < 1 || duplicates+failed < 1 {
		t.Errorf("the task held by the worker cut off was not taken again and settled: %v redelivered, %v duplicates, %v failed",
			redelivered, duplicates, failed)
	}
	if final := delta(`evalgate_worker_tasks_failed_total{final="true",kind="score"}`); final != 0 {
		t.Errorf("%v final failures", final)
	}
}
