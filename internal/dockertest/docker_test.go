//go:build docker

package dockertest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/evalgate/evalgate/schema"
	"github.com/evalgate/evalgate/summary"
	"github.com/evalgate/evalgate/synth"
)

const project = "evalgate-dockertest"

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

type compose struct {
	t    *testing.T
	root string
	env  []string
}

func (c *compose) cmd(args ...string) *exec.Cmd {
	cmd := exec.Command("docker-compose", append([]string{"-p", project, "-f", filepath.Join(c.root, "docker-compose.yml")}, args...)...)
	cmd.Dir = c.root
	cmd.Env = append(os.Environ(), c.env...)
	return cmd
}

func (c *compose) run(args ...string) string {
	c.t.Helper()
	var out, errb bytes.Buffer
	cmd := c.cmd(args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		c.t.Fatalf("docker-compose %s: %v\n%s\n%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
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

func TestClusterSameBitsAndNodeLoss(t *testing.T) {
	if _, err := exec.LookPath("docker-compose"); err != nil {
		t.Skip("docker-compose not installed")
	}
	root := repoRoot(t)
	sh(t, root, []string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-o", "bin/evalgate-linux", "./cmd/evalgate")
	sh(t, root, nil, "docker", "build", "-q", "-t", "evalgate:local", ".")

	data := t.TempDir()
	gold, run := synth.Paths(data, schema.FormatJSONL)
	if err := synth.Write(context.Background(), synth.Options{Queries: 60000, Depth: 100, Seed: 3, Format: schema.FormatJSONL, Tags: true}, gold, run); err != nil {
		t.Fatal(err)
	}
	// The reference is single-process scoring by the same binary, with
	// the same flags: what a user would compare the cluster against.
	measures := "R@5,R@10,P@5,RR,nDCG@10,AP,Success@5,Judged@10,NumQ,NumRel,NumRet"
	var refOut, refErr bytes.Buffer
	score := exec.Command(filepath.Join(root, "bin", "evalgate-linux"), "score", "--gold", gold, "--run", run,
		"-m", measures, "-f", "json")
	score.Stdout, score.Stderr = &refOut, &refErr
	if err := score.Run(); err != nil {
		t.Fatalf("evalgate score: %v\n%s", err, refErr.String())
	}
	ref, err := summary.ReadJSON(&refOut)
	if err != nil {
		t.Fatalf("evalgate score output: %v", err)
	}

	// One task of every job is slow, so a job stays open while the test
	// kills a node and a worker; a short ack wait brings back the tasks
	// the killed worker held.
	c := &compose{t: t, root: root, env: []string{"EVALGATE_TOKEN=dockertest-token", "EVALGATE_DATA=" + data,
		"EVALGATE_ACK_WAIT=5s", "EVALGATE_TEST_FAULT=slow-task=000005-0000:20s"}}
	t.Cleanup(func() { _ = c.cmd("down", "-v", "--remove-orphans").Run() })
	c.run("up", "-d", "--scale", "worker=2", "nats1", "nats2", "nats3", "worker")
	// The cluster is ready when status answers (the coordinator also waits,
	// this only keeps the logs quiet).
	for deadline := time.Now().Add(2 * time.Minute); c.cmd("run", "--rm", "-T", "coordinator", "status").Run() != nil; {
		if time.Now().After(deadline) {
			t.Fatal("the JetStream cluster did not come up")
		}
	}

	job := func(extra ...string) *exec.Cmd {
		args := append([]string{"run", "--rm", "-T", "coordinator", "run", "--gold", "/data/gold.jsonl", "--run", "/data/run.jsonl",
			"-m", measures, "--replicas", "3", "--shards", "16", "--part-bytes", "262144", "--progress", "off",
			"--timeout", "5m", "-f", "json"}, extra...)
		return c.cmd(args...)
	}
	runJob := func(cmd *exec.Cmd) *summary.Summary {
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("coordinator: %v\n%s", err, errb.String())
		}
		s, err := summary.ReadJSON(&out)
		if err != nil {
			t.Fatalf("coordinator output: %v\n%s\n%s", err, out.String(), errb.String())
		}
		return s
	}

	// 1. A healthy cluster gives the single-process bits.
	sameResults(t, runJob(job()), ref)

	// 2. Kill a JetStream node and a worker while a job runs.
	cmd := job()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	// The job is open from its first task to the slow one's end; the slow
	// task may be scored while the inputs are still being published, so
	// the job may never be seen in the published state, only ingesting.
	running := func(status string) bool {
		return strings.Contains(status, " ingesting ") || strings.Contains(status, " published ")
	}
	for status := ""; !running(status); status = c.run("run", "--rm", "-T", "coordinator", "status") {
		select {
		case err := <-exited:
			t.Fatalf("the second job ended (%v) before it was seen running; last status:\n%s\ncoordinator:\n%s", err, status, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second job was never seen running; last status:\n%s\ncoordinator:\n%s", status, errb.String())
		}
	}
	c.run("kill", "nats2")
	c.run("kill", "worker")
	c.run("up", "-d", "--scale", "worker=2", "worker")
	if err := <-exited; err != nil {
		t.Fatalf("coordinator during node loss: %v\n%s", err, errb.String())
	}
	s, err := summary.ReadJSON(&out)
	if err != nil {
		t.Fatalf("coordinator output: %v\n%s", err, errb.String())
	}
	sameResults(t, s, ref)
}
