package main

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
	"github.com/urfave/cli/v2"

	"github.com/evalgate/evalgate/internal/embedded"
	"github.com/evalgate/evalgate/internal/jsq"
)

// natsOptionsFrom parses args with the shared NATS flags and returns the
// connection options they make.
func natsOptionsFrom(t *testing.T, args ...string) jsq.Options {
	t.Helper()
	var got jsq.Options
	app := &cli.App{Name: "evalgate", Commands: []*cli.Command{{
		Name:  "cmd",
		Flags: natsFlags(),
		Action: func(c *cli.Context) error {
			got = natsOptions(c, "evalgate-worker")
			return nil
		},
	}}}
	if err := app.Run(append([]string{"evalgate", "cmd"}, args...)); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestNatsFlagsReachOptions: each connection flag, and each environment
// variable that stands for one, sets its connection option.
func TestNatsFlagsReachOptions(t *testing.T) {
	got := natsOptionsFrom(t, "--nats", "nats://a:4222,nats://b:4222", "--nats-creds", "u.creds", "--nats-nkey", "u.nk",
		"--nats-user", "alice", "--nats-password", "pw", "--nats-token", "tok",
		"--tls-ca", "ca.pem", "--tls-cert", "c.pem", "--tls-key", "k.pem", "--tls-first")
	want := jsq.Options{URL: "nats://a:4222,nats://b:4222", CredsFile: "u.creds", NkeySeedFile: "u.nk",
		User: "alice", Password: "pw", Token: "tok", TLSCA: "ca.pem", TLSCert: "c.pem", TLSKey: "k.pem", TLSFirst: true}
	if !strings.HasPrefix(got.Name, "evalgate-worker@") {
		t.Errorf("client name %q", got.Name)
	}
	got.Name = ""
	if !reflect.DeepEqual(got, want) {
		t.Errorf("flags:\n got %+v\nwant %+v", got, want)
	}

	for env, val := range map[string]string{"EVALGATE_NATS_URL": "nats://env:4222", "EVALGATE_NATS_CREDS": "e.creds",
		"EVALGATE_NATS_NKEY": "e.nk", "EVALGATE_NATS_USER": "bob", "EVALGATE_NATS_PASSWORD": "epw", "EVALGATE_NATS_TOKEN": "etok"} {
		t.Setenv(env, val)
	}
	got = natsOptionsFrom(t)
	got.Name = ""
	want = jsq.Options{URL: "nats://env:4222", CredsFile: "e.creds", NkeySeedFile: "e.nk", User: "bob", Password: "epw", Token: "etok"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("environment:\n got %+v\nwant %+v", got, want)
	}
}

// TestWorkerRejectedCredentials: a worker with credentials the server
// rejects fails at once with a clear error instead of waiting for the
// server; a missing credentials file is a usage error.
func TestWorkerRejectedCredentials(t *testing.T) {
	srv, err := embedded.Start(embedded.Options{StoreDir: t.TempDir(), Listen: "127.0.0.1:-1", User: "evalgate", Password: "s3cret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	dir := t.TempDir()
	// The seed of a key the server does not know.
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := kp.Seed()
	seed := write(t, dir, "stranger.nk", string(raw))
	for name, args := range map[string][]string{
		"wrong password": {"--nats-user", "evalgate", "--nats-password", "guess"},
		"unknown user":   {"--nats-user", "mallory", "--nats-password", "s3cret"},
		"wrong token":    {"--nats-token", "guess"},
		"unknown nkey":   {"--nats-nkey", seed},
		"no credentials": {},
	} {
		code, _, errs := evalgate(t, append([]string{"worker", "--nats", srv.ClientURL(), "--wait-server", "1m"}, args...)...)
		if code != exitOperation || !strings.Contains(errs, "rejected the credentials") {
			t.Errorf("%s: exit %d, want %d and a rejected-credentials error:\n%s", name, code, exitOperation, errs)
		}
		if strings.Contains(errs, "waiting for the NATS server") {
			t.Errorf("%s: the worker retried rejected credentials:\n%s", name, errs)
		}
	}
	code, _, errs := evalgate(t, "worker", "--nats", srv.ClientURL(), "--nats-creds", filepath.Join(dir, "nope.creds"))
	if code != exitBadInput || !strings.Contains(errs, "nope.creds") {
		t.Errorf("missing creds file: exit %d, want %d naming the file:\n%s", code, exitBadInput, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope.creds")); !os.IsNotExist(err) {
		t.Fatal("the test's creds file exists")
	}
}
