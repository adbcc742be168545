package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/evalgate/evalgate/internal/jsq"
)

// syncBuffer is a stderr that tests read while the command writes it; it
// reports the server's client URL once the start-up banner is written.
type syncBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	ready chan string // receives the client URL once
	sent  bool
}

var bannerURL = regexp.MustCompile(`evalgate server: JetStream on (\S+),`)

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	if m := bannerURL.FindStringSubmatch(s.b.String()); m != nil && !s.sent && s.ready != nil {
		s.sent = true
		s.ready <- m[1]
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serverProc is an `evalgate server` running in-process.
type serverProc struct {
	url    string
	stderr *syncBuffer
	code   chan int
	stop   context.CancelFunc
}

// startServerCmd runs `evalgate server args...`. If the server starts, it
// returns with url set and stops it when the test ends; if the command
// exits first, url is "" and exit holds the code.
func startServerCmd(t *testing.T, args ...string) (p *serverProc, exit int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p = &serverProc{stderr: &syncBuffer{ready: make(chan string, 1)}, code: make(chan int, 1), stop: cancel}
	go func() {
		app := newApp(io.Discard, p.stderr)
		p.code <- report(app.RunContext(ctx, append([]string{"evalgate", "server"}, args...)), p.stderr, app.Metadata)
	}()
	select {
	case p.url = <-p.stderr.ready:
		t.Cleanup(func() {
			cancel()
			if code := <-p.code; code != 0 {
				t.Errorf("server exit %d:\n%s", code, p.stderr)
			}
		})
		return p, 0
	case code := <-p.code:
		cancel()
		return p, code
	}
}

// TestServerRefusesNonLoopbackWithoutAuth: a config file is not
// authentication by itself; one without an authorization block, or with a
// no_auth_user, cannot expose the server.
func TestServerRefusesNonLoopbackWithoutAuth(t *testing.T) {
	dir := t.TempDir()
	for name, conf := range map[string]string{
		"only max_payload": "max_payload: 2MB\n",
		"no_auth_user":     "authorization { users: [ {user: alice, password: s3cret} ] }\nno_auth_user: alice\n",
	} {
		cfg := write(t, dir, strings.ReplaceAll(name, " ", "-")+".conf", conf)
		p, code := startServerCmd(t, "--listen", "0.0.0.0:0", "--store", t.TempDir(), "--config", cfg)
		if code != exitBadInput || p.url != "" {
			t.Fatalf("%s: exit %d, server at %q; want a refusal (exit 2):\n%s", name, code, p.url, p.stderr)
		}
		if !strings.Contains(p.stderr.String(), "exposes the queue beyond this machine") {
			t.Errorf("%s: unclear refusal:\n%s", name, p.stderr)
		}
	}
	// The same without --config, and with auth given twice.
	p, code := startServerCmd(t, "--listen", "0.0.0.0:0", "--store", t.TempDir())
	if code != exitBadInput {
		t.Fatalf("no auth at all: exit %d:\n%s", code, p.stderr)
	}
	cfg := write(t, dir, "users.conf", "authorization { users: [ {user: alice, password: s3cret} ] }\n")
	p, code = startServerCmd(t, "--listen", "127.0.0.1:0", "--store", t.TempDir(), "--config", cfg, "--user", "bob", "--password", "pw")
	if code != exitBadInput || !strings.Contains(p.stderr.String(), "configures client authentication itself") {
		t.Fatalf("auth in --config and --user: exit %d:\n%s", code, p.stderr)
	}
}

// TestServerWithConfigUsers: a server whose users come from the config
// file starts (its own setup client authenticates as the internal user)
// and creates the streams; a client with the right credentials uses them,
// one without or with a wrong password is refused.
func TestServerWithConfigUsers(t *testing.T) {
	dir := t.TempDir()
	cfg := write(t, dir, "users.conf", "max_payload: 2MB\nauthorization { users: [ {user: alice, password: s3cret} ] }\n")
	p, code := startServerCmd(t, "--listen", "127.0.0.1:0", "--store", t.TempDir(), "--config", cfg)
	if p.url == "" {
		t.Fatalf("server did not start: exit %d:\n%s", code, p.stderr)
	}
	ctx := context.Background()
	c, err := jsq.Connect(ctx, jsq.Options{URL: p.url, User: "alice", Password: "s3cret"})
	if err != nil {
		t.Fatalf("right credentials: %v", err)
	}
	defer c.Close()
	if _, err := c.Consumer(ctx); err != nil {
		t.Fatalf("the server did not create the topology: %v", err)
	}
	if c.MaxPayload() != 2<<20 {
		t.Errorf("max payload %d: the config file was not applied", c.MaxPayload())
	}
	for name, o := range map[string]jsq.Options{
		"no credentials": {URL: p.url},
		"wrong password": {URL: p.url, User: "alice", Password: "guess"},
	} {
		c, err := jsq.Connect(ctx, o)
		if err == nil {
			c.Close()
			t.Errorf("%s: connected", name)
		} else if !errors.Is(err, jsq.ErrUnauthorized) {
			t.Errorf("%s: %v, want ErrUnauthorized", name, err)
		}
	}
}

// TestServerConfigWithoutJetStream: accounts without JetStream in
// --config are a configuration error, reported at once (exit 2) with the
// fix, not after a minute of retries.
func TestServerConfigWithoutJetStream(t *testing.T) {
	cfg := write(t, t.TempDir(), "accounts.conf", "accounts { A { users = [ {user: a, password: b} ] } }\n")
	p, code := startServerCmd(t, "--listen", "127.0.0.1:0", "--store", t.TempDir(), "--config", cfg)
	if code != exitBadInput || p.url != "" {
		t.Fatalf("exit %d, server at %q; want exit 2:\n%s", code, p.url, p.stderr)
	}
	if out := p.stderr.String(); !strings.Contains(out, "account A") || !strings.Contains(out, "jetstream: enabled") {
		t.Errorf("unclear message:\n%s", out)
	}
}

// TestServerRefusedCreatesNoStore: server refusing its address (beyond
// loopback without authentication) exits 2 and creates no store directory.
func TestServerRefusedCreatesNoStore(t *testing.T) {
	store := filepath.Join(t.TempDir(), "evalgate-data")
	p, code := startServerCmd(t, "--listen", "0.0.0.0:0", "--store", store)
	if code != 2 || !strings.Contains(p.stderr.String(), "exposes the queue beyond this machine") {
		t.Fatalf("exit %d:\n%s", code, p.stderr)
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Fatalf("store directory created: %v", err)
	}
}

// TestServerBadStore: a store that is not a directory is bad input
// (exit 2), reported at once by server and, as embedded.ErrBadStore, by
// run.
func TestServerBadStore(t *testing.T) {
	dir := t.TempDir()
	file := write(t, dir, "file", "")
	p, code := startServerCmd(t, "--listen", "127.0.0.1:0", "--store", file)
	if code != exitBadInput || !strings.Contains(p.stderr.String(), "not a directory") {
		t.Fatalf("server --store FILE: exit %d:\n%s", code, p.stderr)
	}
	g, r := write(t, dir, "g.qrels", goldQrels), write(t, dir, "r.trec", runTREC)
	code, out, errs := evalgate(t, "run", "--store", file, "--gold", g, "--run", r)
	if code != exitBadInput || out != "" || !strings.Contains(errs, file+" is not a directory") {
		t.Fatalf("run --store FILE: exit %d\n%s\n%s", code, out, errs)
	}
}

// TestServerFlagUsage: every malformed flag is bad usage (exit 2), found
// before the server starts.
func TestServerFlagUsage(t *testing.T) {
	dir := t.TempDir()
	bad := write(t, dir, "bad.conf", "max_payload: [\n")
	for _, args := range [][]string{
		{"--listen", ":14223"},
		{"--listen", "localhost:abc"},
		{"--listen", "127.0.0.1:99999"},
		{"--listen", "127.0.0.1"},
		{"--password", "pw"},
		{"--max-payload", "-1"},
		{"--max-payload", "3000000000"},
		{"--max-payload", "100000000"}, // over nats-server's max_pending
		{"--config", bad},
	} {
		p, code := startServerCmd(t, append([]string{"--listen", "127.0.0.1:0", "--store", t.TempDir()}, args...)...)
		if code != exitBadInput || p.url != "" {
			t.Errorf("%q: exit %d, server at %q; want exit 2:\n%s", args, code, p.url, p.stderr)
		}
	}
}

// TestServerConfigListen: without --listen, the config file's listen
// address is used, and judged like --listen (a non-loopback one needs
// authentication); with both, they must agree.
func TestServerConfigListen(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cfg := write(t, dir, "listen.conf", "listen: "+addr+"\n")
	p, code := startServerCmd(t, "--store", t.TempDir(), "--config", cfg)
	if p.url != "nats://"+addr {
		t.Fatalf("server at %q (exit %d), want nats://%s:\n%s", p.url, code, addr, p.stderr)
	}
	// The others are refused before they listen: no clash on the port.
	exposed := write(t, dir, "exposed.conf", fmt.Sprintf("listen: 0.0.0.0:%d\n", port))
	p, code = startServerCmd(t, "--store", t.TempDir(), "--config", exposed)
	if code != exitBadInput || !strings.Contains(p.stderr.String(), "exposes the queue beyond this machine") {
		t.Fatalf("non-loopback listen in --config without auth: exit %d, server at %q:\n%s", code, p.url, p.stderr)
	}
	p, code = startServerCmd(t, "--store", t.TempDir(), "--config", cfg, "--listen", "127.0.0.1:0")
	if code != exitBadInput || !strings.Contains(p.stderr.String(), "give it in one place") {
		t.Fatalf("--listen and a different one in --config: exit %d, server at %q:\n%s", code, p.url, p.stderr)
	}
}
