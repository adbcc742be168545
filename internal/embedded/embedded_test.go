package embedded

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/evalgate/evalgate/internal/jsq"
)

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "nats.conf")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	usersConf  = "authorization { users: [ {user: alice, password: s3cret} ] }\n"
	tokenConf  = "authorization { token: t0ken }\n"
	noAuthConf = "authorization { users: [ {user: alice, password: s3cret} ] }\nno_auth_user: alice\n"
	// Two application accounts: which one holds the streams is unknown.
	twoAccountsConf = "accounts { A: { jetstream: enabled, users: [ {user: a, password: pa} ] }, " +
		"B: { jetstream: enabled, users: [ {user: b, password: pb} ] } }\n"
	// One application account plus a system account user.
	appAccountConf = "accounts { APP: { jetstream: enabled, users: [ {user: app, password: pw} ] }, " +
		"SYS: { users: [ {user: admin, password: pa} ] } }\nsystem_account: SYS\n"
)

// TestNonLoopbackNeedsAuth: a non-loopback listen address is refused
// unless the final options (config file included) require credentials;
// a config file's own authentication cannot be mixed with User or Token.
// Nothing here binds a socket.
func TestNonLoopbackNeedsAuth(t *testing.T) {
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	for _, tc := range []struct {
		name   string
		config string // file content; "" for no file
		opts   Options
		want   error
	}{
		{name: "no config, no credentials", want: ErrNoAuth},
		{name: "config without auth", config: "max_payload: 2MB\n", want: ErrNoAuth},
		{name: "config without auth, user flag", config: "max_payload: 2MB\n", opts: Options{User: "u", Password: "p"}},
		{name: "config without auth, token flag", config: "max_payload: 2MB\n", opts: Options{Token: "t"}},
		{name: "user flag", opts: Options{User: "u", Password: "p"}},
		{name: "config with users", config: usersConf},
		{name: "config with a token", config: tokenConf},
		{name: "config with a single user", config: "authorization { user: alice, password: s3cret }\n"},
		{name: "config with nkeys", config: "authorization { users: [ {nkey: " + pub + "} ] }\n"},
		{name: "config with accounts", config: appAccountConf},
		{name: "config with no_auth_user", config: noAuthConf, want: ErrNoAuth},
		{name: "config with users, user flag", config: usersConf, opts: Options{User: "u", Password: "p"}, want: ErrAuthConflict},
		{name: "config with a token, other token flag", config: tokenConf, opts: Options{Token: "t"}, want: ErrAuthConflict},
		// Repeating the file's own credentials adds nothing (docker-compose.yml does).
		{name: "config with a token, same token flag", config: tokenConf, opts: Options{Token: "t0ken"}},
		{name: "config with users, same user flag", config: usersConf, opts: Options{User: "alice", Password: "s3cret"}},
		{name: "config with users, same user, other password", config: usersConf, opts: Options{User: "alice", Password: "x"}, want: ErrAuthConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.StoreDir, o.Listen, o.AllowNonLoopback, o.Name = t.TempDir(), "0.0.0.0:4222", true, "evalgate"
			if tc.config != "" {
				o.ConfigFile = writeConfig(t, tc.config)
			}
			s := &Server{opts: o, port: -1, admin: kp}
			_, err := s.serverOptions()
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	// Verified client certificates authenticate too (no files needed to
	// check the rule itself).
	if why := admitsAnonymous(&server.Options{TLSConfig: &tls.Config{}, TLSVerify: true}); why != "" {
		t.Errorf("mutual TLS: %s", why)
	}
	if why := admitsAnonymous(&server.Options{TLSConfig: &tls.Config{}}); why == "" {
		t.Error("TLS without client verification counted as authentication")
	}
}

func start(t *testing.T, o Options) *Server {
	t.Helper()
	o.StoreDir, o.Listen = t.TempDir(), "127.0.0.1:-1"
	s, err := Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

func connect(t *testing.T, o jsq.Options) (*jsq.Conn, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := jsq.Connect(ctx, o)
	if err == nil {
		t.Cleanup(c.Close)
	}
	return c, err
}

// TestInternalUser: under every credential-based auth the server has an
// internal user that creates the topology in-process, in the account the
// configured users share, so that they find it; it cannot connect over
// TCP; and a server without credentials needs none.
func TestInternalUser(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		opts   Options
		config string
		client jsq.Options // a configured client, which must see the topology
	}{
		{name: "users in config", config: usersConf, client: jsq.Options{User: "alice", Password: "s3cret"}},
		{name: "token in config", config: tokenConf, client: jsq.Options{Token: "t0ken"}},
		{name: "users in an account", config: appAccountConf, client: jsq.Options{User: "app", Password: "pw"}},
		{name: "user flag", opts: Options{User: "bob", Password: "pw"}, client: jsq.Options{User: "bob", Password: "pw"}},
		{name: "token flag", opts: Options{Token: "tok"}, client: jsq.Options{Token: "tok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			if tc.config != "" {
				o.ConfigFile = writeConfig(t, tc.config)
			}
			s := start(t, o)
			iu, err := s.InternalUser()
			if err != nil || iu == nil {
				t.Fatalf("internal user %v, %v", iu, err)
			}
			setup, err := connect(t, jsq.Options{InProcess: s, Nkey: iu.Nkey, SignNonce: iu.Sign})
			if err != nil {
				t.Fatalf("internal user, in-process: %v", err)
			}
			if err := setup.EnsureTopology(ctx, jsq.DefaultTopology()); err != nil {
				t.Fatalf("internal user creates the topology: %v", err)
			}
			co := tc.client
			co.URL = s.ClientURL()
			c, err := connect(t, co)
			if err != nil {
				t.Fatalf("configured client: %v", err)
			}
			if _, err := c.Consumer(ctx); err != nil {
				t.Fatalf("the configured client does not see the topology: %v", err)
			}
			if _, err := connect(t, jsq.Options{URL: s.ClientURL(), Nkey: iu.Nkey, SignNonce: iu.Sign}); !errors.Is(err, jsq.ErrUnauthorized) {
				t.Fatalf("internal user over TCP: %v, want ErrUnauthorized", err)
			}
			if _, err := connect(t, jsq.Options{URL: s.ClientURL()}); !errors.Is(err, jsq.ErrUnauthorized) {
				t.Fatalf("no credentials over TCP: %v, want ErrUnauthorized", err)
			}
		})
	}

	t.Run("least privilege", func(t *testing.T) {
		s := start(t, Options{ConfigFile: writeConfig(t, usersConf)})
		iu, _ := s.InternalUser()
		denied := make(chan error, 1)
		nc, err := nats.Connect("", nats.InProcessServer(s), nats.Nkey(iu.Nkey, iu.Sign),
			nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
				select {
				case denied <- err:
				default:
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if _, err := nc.SubscribeSync("evalgate.>"); err != nil {
			t.Fatal(err)
		}
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := <-denied; !errors.Is(err, nats.ErrPermissionViolation) {
			t.Fatalf("subscribing beyond _INBOX.>: %v, want a permission violation", err)
		}
	})

	t.Run("no credentials needed", func(t *testing.T) {
		s := start(t, Options{})
		if iu, err := s.InternalUser(); iu != nil || err != nil {
			t.Fatalf("internal user %v, %v; want none", iu, err)
		}
		if _, err := connect(t, jsq.Options{InProcess: s}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("identities decided elsewhere", func(t *testing.T) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			t.Fatal(err)
		}
		for name, o := range map[string]*server.Options{
			"operator":     {TrustedKeys: []string{"OAKEY"}},
			"auth callout": {AuthCallout: &server.AuthCallout{Account: "AUTH"}, Users: []*server.User{{Username: "auth", Password: "pw"}}},
		} {
			s := &Server{admin: kp}
			if err := s.addInternalUser(o); err != nil {
				t.Fatal(err)
			}
			if s.internal != nil || !errors.Is(s.noUser, ErrNoInternalUser) || len(o.Nkeys) != 0 {
				t.Errorf("%s: internal user %v, %v, %d nkeys; want none and ErrNoInternalUser", name, s.internal, s.noUser, len(o.Nkeys))
			}
		}
	})

	t.Run("several accounts", func(t *testing.T) {
		s := start(t, Options{ConfigFile: writeConfig(t, twoAccountsConf)})
		iu, err := s.InternalUser()
		if iu != nil || !errors.Is(err, ErrNoInternalUser) || !strings.Contains(err.Error(), "A, B") {
			t.Fatalf("internal user %v, %v; want ErrNoInternalUser naming the accounts", iu, err)
		}
	})
}

// TestStartBadStore: a store that is not a directory, or cannot be
// created, fails Start at once with ErrBadStore (nats-server itself would
// only log it and never become ready); a missing one is created.
func TestStartBadStore(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, store := range map[string]string{
		"a regular file": file,
		"under a file":   filepath.Join(file, "store"),
	} {
		s, err := Start(Options{StoreDir: store})
		if err == nil {
			s.Shutdown()
		}
		if !errors.Is(err, ErrBadStore) || !strings.Contains(err.Error(), store) {
			t.Errorf("%s: %v, want ErrBadStore naming %s", name, err, store)
		}
	}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := filepath.Join(dir, "read-only")
		if err := os.Mkdir(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		if s, err := Start(Options{StoreDir: ro}); !errors.Is(err, ErrBadStore) {
			if err == nil {
				s.Shutdown()
			}
			t.Errorf("read-only directory: %v, want ErrBadStore", err)
		}
	}
	store := filepath.Join(dir, "new", "store")
	s, err := Start(Options{StoreDir: store})
	if err != nil {
		t.Fatalf("missing store: %v", err)
	}
	s.Shutdown()
	if fi, err := os.Stat(store); err != nil || !fi.IsDir() {
		t.Errorf("store not created: %v", err)
	}
}

// TestRefusedServerCreatesNoStore: a server refused for its options (here
// an address beyond loopback without authentication) creates no store
// directory.
func TestRefusedServerCreatesNoStore(t *testing.T) {
	store := filepath.Join(t.TempDir(), "new-store")
	s, err := Start(Options{StoreDir: store, Listen: "0.0.0.0:0", AllowNonLoopback: true})
	var noAuth *NoAuthError
	if !errors.As(err, &noAuth) {
		if err == nil {
			s.Shutdown()
		}
		t.Fatalf("no authentication beyond loopback: %v, want a NoAuthError", err)
	}
	if _, err := os.Stat(store); !os.IsNotExist(err) {
		t.Fatalf("refused server created its store: %v", err)
	}
}

// TestStartReportsServerFailure: when nats-server cannot start, Start
// returns its reason at once rather than waiting for it to be ready.
func TestStartReportsServerFailure(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	began := time.Now()
	s, err := Start(Options{StoreDir: t.TempDir(), Listen: busy.Addr().String()})
	if err == nil {
		s.Shutdown()
		t.Fatalf("started on a port in use (%s)", busy.Addr())
	}
	if !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("%v: the server's reason is missing", err)
	}
	if d := time.Since(began); d > readyTimeout/2 {
		t.Errorf("took %s", d)
	}
}

// TestStartConfigWithoutJetStream: a config file whose accounts leave
// evalgate's clients without JetStream fails Start at once, naming the
// accounts and the fix.
func TestStartConfigWithoutJetStream(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		want         []string
	}{
		{"one account", "accounts { A { users = [ {user: a, password: b} ] } }\n", []string{"account A", "jetstream: enabled"}},
		{"two accounts", "accounts { A { users = [ {user: a, password: b} ] }, B { users = [ {user: c, password: d} ] } }\n",
			[]string{"A, B", "jetstream: enabled"}},
		{"global account", "accounts { A { jetstream: enabled } }\n", []string{"global account", "jetstream: enabled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Start(Options{StoreDir: t.TempDir(), ConfigFile: writeConfig(t, tc.config)})
			if err == nil {
				s.Shutdown()
			}
			if !errors.Is(err, ErrNoJetStream) {
				t.Fatalf("%v, want ErrNoJetStream", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v: does not say %q", err, w)
				}
			}
		})
	}
	// One account with JetStream among several is enough to start.
	s := start(t, Options{ConfigFile: writeConfig(t, "accounts { A { jetstream: enabled, users = [ {user: a, password: b} ] }, "+
		"B { users = [ {user: c, password: d} ] } }\n")})
	if _, err := s.InternalUser(); !errors.Is(err, ErrNoInternalUser) {
		t.Errorf("internal user: %v", err)
	}
}

// freePort returns a port nothing listens on (for the moment).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestConfigListen: a config file's listen address is used when Listen
// is not given (a port alone on loopback), is judged by the same rules,
// and cannot be contradicted by Listen.
func TestConfigListen(t *testing.T) {
	port := freePort(t)
	for _, tc := range []struct {
		name, config, listen string
		wantURL              string
		want                 error
	}{
		{name: "listen", config: fmt.Sprintf("listen: 127.0.0.1:%d\n", port), wantURL: fmt.Sprintf("nats://127.0.0.1:%d", port)},
		{name: "port alone is loopback", config: fmt.Sprintf("port: %d\n", port), wantURL: fmt.Sprintf("nats://127.0.0.1:%d", port)},
		{name: "same as Listen", config: fmt.Sprintf("listen: 127.0.0.1:%d\n", port), listen: fmt.Sprintf("127.0.0.1:%d", port),
			wantURL: fmt.Sprintf("nats://127.0.0.1:%d", port)},
		{name: "other than Listen", config: fmt.Sprintf("listen: 127.0.0.1:%d\n", port), listen: "127.0.0.1:-1", want: ErrListenConflict},
		{name: "non-loopback without auth", config: fmt.Sprintf("listen: 0.0.0.0:%d\n", port), want: ErrNoAuth},
		{name: "host alone without auth", config: "host: 0.0.0.0\n", want: ErrNoAuth},
		{name: "no listen in the file", config: "max_payload: 2MB\n", wantURL: "nats://127.0.0.1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Start(Options{StoreDir: t.TempDir(), ConfigFile: writeConfig(t, tc.config), Listen: tc.listen, DefaultListen: "127.0.0.1:-1"})
			if err == nil {
				defer s.Shutdown()
			}
			if tc.want != nil || err != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("%v, want %v", err, tc.want)
				}
				return
			}
			if url := s.ClientURL(); !strings.HasPrefix(url, tc.wantURL) || s.Exposed() {
				t.Errorf("listens at %q (exposed %v), want %q on loopback", url, s.Exposed(), tc.wantURL)
			}
		})
	}
	if s := start(t, Options{}); s.ClientURL() == "" || s.Exposed() {
		t.Errorf("Listen without a config file: %q", s.ClientURL())
	}
	s, err := Start(Options{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	if s.ClientURL() != "" {
		t.Errorf("no address at all listens at %s", s.ClientURL())
	}
}

// TestInvalidListen: a malformed listen address is ErrInvalidOptions.
func TestInvalidListen(t *testing.T) {
	for _, listen := range []string{":4222", "127.0.0.1:abc", "127.0.0.1:99999", "127.0.0.1"} {
		s, err := Start(Options{StoreDir: t.TempDir(), Listen: listen})
		if err == nil {
			s.Shutdown()
		}
		if !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%q: %v, want ErrInvalidOptions", listen, err)
		}
	}
}

// TestReady: a running server with JetStream is ready; after Shutdown it
// says it is not running.
func TestReady(t *testing.T) {
	s, err := Start(Options{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(); err != nil {
		t.Fatalf("Ready = %v", err)
	}
	s.Shutdown()
	if err := s.Ready(); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("Ready after Shutdown = %v", err)
	}
}
