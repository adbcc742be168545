package embedded

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"
	"github.com/rs/zerolog"
)

var (
	// ErrNoAuth is matched by the error of Start (a *NoAuthError) for a
	// non-loopback listen address when the options, config file
	// included, let clients in without credentials.
	ErrNoAuth = errors.New("embedded: no client authentication")
	// ErrAuthConflict is returned by Start when User or Token is given
	// with a config file that configures client authentication itself.
	ErrAuthConflict = errors.New("embedded: authentication configured twice")
	// ErrNoInternalUser is returned by InternalUser when the server's
	// authentication leaves no place for one (operator JWTs, an auth
	// callout, users in several accounts).
	ErrNoInternalUser = errors.New("embedded: no internal user")
	// ErrBadStore is matched by the error of Start when StoreDir is not a
	// directory the server can write to, or cannot be created.
	ErrBadStore = errors.New("embedded: bad store directory")
	// ErrInvalidOptions is matched by the errors of Start that come from
	// the options themselves: an unreadable or invalid config file, a
	// malformed listen address, settings nats-server refuses.
	ErrInvalidOptions = errors.New("embedded: invalid options")
	// ErrListenConflict is returned by Start (matching ErrInvalidOptions
	// too) when Listen and the config file name different addresses.
	ErrListenConflict = errors.New("embedded: listen address given twice")
	// ErrNoJetStream is matched by the error of Start (a
	// *NoJetStreamError) when the account evalgate's clients use has no
	// JetStream.
	ErrNoJetStream = errors.New("embedded: jetstream not enabled for the account")
)

// optionsError marks err as ErrInvalidOptions, and kind if set, without
// changing its text.
type optionsError struct{ err, kind error }

func (e optionsError) Error() string { return e.err.Error() }
func (e optionsError) Unwrap() []error {
	if e.kind != nil {
		return []error{e.err, ErrInvalidOptions, e.kind}
	}
	return []error{e.err, ErrInvalidOptions}
}

// storeError marks err as ErrBadStore without changing its text.
type storeError struct{ err error }

func (e storeError) Error() string   { return e.err.Error() }
func (e storeError) Unwrap() []error { return []error{e.err, ErrBadStore} }

// NoJetStreamError says which accounts lack JetStream. It matches
// ErrNoJetStream.
type NoJetStreamError struct {
	Accounts   []string // the accounts evalgate's clients may use, none with JetStream
	ConfigFile string   // the config file that defines them
}

func (e *NoJetStreamError) Error() string {
	switch {
	case len(e.Accounts) == 1 && e.Accounts[0] == server.DEFAULT_GLOBAL_ACCOUNT:
		return fmt.Sprintf("clients use the global account, which has no JetStream because %s defines accounts: "+
			"put the users in an account with `jetstream: enabled`", e.ConfigFile)
	case len(e.Accounts) == 1:
		return fmt.Sprintf("account %s in %s has no JetStream: add `jetstream: enabled` to it "+
			"(accounts { %s { jetstream: enabled, users: [...] } })", e.Accounts[0], e.ConfigFile, e.Accounts[0])
	}
	return fmt.Sprintf("none of the accounts %s in %s has JetStream: add `jetstream: enabled` to the one evalgate uses",
		strings.Join(e.Accounts, ", "), e.ConfigFile)
}

// Is makes errors.Is(err, ErrNoJetStream) true.
func (e *NoJetStreamError) Is(target error) bool { return target == ErrNoJetStream }

// NoAuthError says why a server that should listen beyond loopback would
// admit clients without credentials. It matches ErrNoAuth.
type NoAuthError struct {
	Listen string // the listen address
	Why    string // e.g. "no client authentication is configured"
}

func (e *NoAuthError) Error() string {
	return fmt.Sprintf("embedded: listen address %q is not loopback and %s", e.Listen, e.Why)
}

// Is makes errors.Is(err, ErrNoAuth) true.
func (e *NoAuthError) Is(target error) bool { return target == ErrNoAuth }

// Options configures the server.
type Options struct {
	// StoreDir holds JetStream's file store. Required.
	StoreDir string
	// Listen is "host:port" for client connections. Port 0 or -1 picks a
	// free port. A config file that sets another address (listen, or host
	// and port) is refused (ErrListenConflict). Empty: the config file's
	// address if it sets one (a port alone listens on 127.0.0.1, not on
	// nats-server's 0.0.0.0), else DefaultListen.
	Listen string
	// DefaultListen is used when neither Listen nor the config file gives
	// an address. Empty: no listener at all (in-process connections only).
	DefaultListen string
	// AllowNonLoopback must be set to listen on anything but loopback
	// from Listen or DefaultListen. An address from the config file is
	// explicit enough by itself. Either way, a non-loopback address needs
	// client authentication (ErrNoAuth).
	AllowNonLoopback bool
	// Name is the server name (default "evalgate").
	Name string
	// MaxPayload overrides the 1 MiB default message size limit (bytes).
	MaxPayload int32
	// SyncAlways fsyncs every write instead of every two minutes.
	SyncAlways bool
	// ConfigFile, if set, is a nats-server configuration file applied
	// before the options above (for auth, TLS, limits).
	ConfigFile string
	// User and Password, or Token, require authentication without a
	// config file (a password starting with $2a$ is a bcrypt hash). A
	// config file that configures authentication itself cannot be
	// combined with them (ErrAuthConflict).
	User     string
	Password string
	Token    string
	// Logger receives the server's log lines at debug level; nil: silent.
	Logger *zerolog.Logger
}

// Server is a running embedded server.
type Server struct {
	opts  Options
	port  int
	live  atomic.Pointer[server.Server]
	admin nkeys.KeyPair // the internal user's key, for the server's lifetime

	mu       sync.Mutex
	internal *InternalUser // guarded by mu; nil: no credentials needed
	noUser   error         // guarded by mu; why there is no internal user
	tls      bool          // guarded by mu; clients can use TLS
	listens  bool          // guarded by mu; there is a TCP listener
	exposed  bool          // guarded by mu; it listens beyond loopback
}

// InternalUser holds the credentials of the server's internal user, for
// nats.Nkey (jsq.Options.Nkey and SignNonce).
type InternalUser struct {
	// Nkey is the user's public key.
	Nkey string
	// Sign signs the server's connect nonce with the user's seed.
	Sign func(nonce []byte) ([]byte, error)
}

// InternalUser returns the credentials evalgate's own in-process clients
// use: nil when the server requires none, or an error wrapping
// ErrNoInternalUser that says why this server's authentication has no
// place for one. Safe for concurrent use.
func (s *Server) InternalUser() (*InternalUser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.internal, s.noUser
}

// TLS reports whether clients can connect with TLS (a tls block in the
// config file).
func (s *Server) TLS() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tls
}

// Exposed reports whether the server listens beyond loopback.
func (s *Server) Exposed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exposed
}

// readyTimeout bounds how long Start waits for the server.
const readyTimeout = 30 * time.Second

// Start starts a server and waits until it accepts connections.
func Start(o Options) (*Server, error) {
	if o.StoreDir == "" {
		return nil, optionsError{err: errors.New("start nats server: no store directory")}
	}
	if err := checkStore(o.StoreDir, false); err != nil {
		return nil, err
	}
	if o.Name == "" {
		o.Name = "evalgate"
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return nil, fmt.Errorf("create internal nkey: %w", err)
	}
	s := &Server{opts: o, port: -1, admin: kp}
	if err := s.start(); err != nil {
		return nil, err
	}
	return s, nil
}

// checkStore makes sure dir is a directory the server can write to:
// nats-server itself would only log the failure and never become ready. A
// dir that does not exist is created only if create is set — once the
// options are known to be good, so that a server refused for its options
// leaves nothing behind.
func checkStore(dir string, create bool) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist) && !create:
		return nil
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return storeError{fmt.Errorf("store directory %s cannot be created: %w", dir, err)}
		}
		return nil
	case err != nil:
		return storeError{fmt.Errorf("store directory %s: %w", dir, err)}
	case !fi.IsDir():
		return storeError{fmt.Errorf("store directory %s is not a directory", dir)}
	}
	f, err := os.CreateTemp(dir, ".evalgate-write-check-*")
	if err != nil {
		return storeError{fmt.Errorf("store directory %s is not writable: %w", dir, err)}
	}
	f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return storeError{fmt.Errorf("store directory %s: %w", dir, err)}
	}
	return nil
}

func (s *Server) serverOptions() (*server.Options, error) {
	o := &server.Options{}
	if s.opts.ConfigFile != "" {
		fo, err := server.ProcessConfigFile(s.opts.ConfigFile)
		if err != nil {
			return nil, optionsError{err: fmt.Errorf("read nats config %s: %w", s.opts.ConfigFile, err)}
		}
		o = fo
		if a := credentialAuth(o); a != "" && !s.acceptedBy(o) {
			return nil, fmt.Errorf("%w: %s requires %s; a user or token cannot be added to it", ErrAuthConflict, s.opts.ConfigFile, a)
		}
	}
	if o.ServerName == "" {
		o.ServerName = s.opts.Name // a cluster config names each node
	}
	o.JetStream = true
	o.StoreDir = s.opts.StoreDir
	o.NoSigs = true
	o.NoLog = s.opts.Logger == nil
	o.HTTPPort = 0
	if s.opts.MaxPayload > 0 {
		o.MaxPayload = s.opts.MaxPayload
	}
	if s.opts.SyncAlways {
		o.SyncAlways = true
	}
	if !s.acceptedBy(o) { // else the config file has these credentials already
		if s.opts.User != "" {
			o.Users = []*server.User{{Username: s.opts.User, Password: s.opts.Password}}
		}
		if s.opts.Token != "" {
			o.Authorization = s.opts.Token
		}
	}
	if err := s.addInternalUser(o); err != nil {
		return nil, err
	}
	s.tls = o.TLSConfig != nil
	listen, allow, err := s.listenAddress(o)
	if err != nil {
		return nil, err
	}
	s.listens, s.exposed = listen != "", false
	if listen == "" {
		o.DontListen = true
		o.Host = "127.0.0.1"
		return o, nil
	}
	host, portText, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, optionsError{err: fmt.Errorf("parse listen address %q: %w", listen, err)}
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < -1 || port > 65535 {
		return nil, optionsError{err: fmt.Errorf("listen address %q: the port must be a number from 0 to 65535 (or -1)", listen)}
	}
	if host == "" {
		return nil, optionsError{err: fmt.Errorf("listen address %q: give a host (127.0.0.1 for this machine only)", listen)}
	}
	if !isLoopback(host) {
		if !allow {
			return nil, optionsError{err: fmt.Errorf("listen address %q is not loopback: pass it explicitly to expose the server", listen)}
		}
		if why := admitsAnonymous(o); why != "" {
			return nil, &NoAuthError{Listen: listen, Why: why}
		}
		s.exposed = true
	}
	if s.port > 0 {
		port = s.port // a restart keeps the port clients know
	} else if port == 0 {
		port = -1
	}
	o.Host, o.Port = host, port
	return o, nil
}

// listenAddress picks the address to listen on from Listen, the config
// file as read into o, and DefaultListen, and says whether it may be
// beyond loopback.
func (s *Server) listenAddress(o *server.Options) (listen string, allowNonLoopback bool, err error) {
	file := ""
	if o.Host != "" || o.Port != 0 {
		host, port := o.Host, o.Port
		if host == "" {
			host = "127.0.0.1" // evalgate's default, not nats-server's 0.0.0.0
		}
		if port == 0 {
			port = server.DEFAULT_PORT
		}
		file = net.JoinHostPort(host, strconv.Itoa(port))
	}
	switch {
	case file == "" && s.opts.Listen != "":
		return s.opts.Listen, s.opts.AllowNonLoopback, nil
	case file == "":
		return s.opts.DefaultListen, s.opts.AllowNonLoopback, nil
	case s.opts.Listen == "":
		return file, true, nil // the file asks for it explicitly
	case !sameAddress(s.opts.Listen, file):
		return "", false, optionsError{err: fmt.Errorf("listen address %s differs from %s in %s: give it in one place",
			s.opts.Listen, file, s.opts.ConfigFile), kind: ErrListenConflict}
	}
	return s.opts.Listen, s.opts.AllowNonLoopback, nil
}

// sameAddress reports whether two host:port addresses are written alike
// (ports compared as numbers).
func sameAddress(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(a)
	hb, pb, errB := net.SplitHostPort(b)
	if errA != nil || errB != nil {
		return a == b
	}
	na, errA := strconv.Atoi(pa)
	nb, errB := strconv.Atoi(pb)
	return ha == hb && errA == nil && errB == nil && na == nb
}

// externalAuth names the authentication under o that decides identities
// and accounts outside the server's own user list, or returns "".
func externalAuth(o *server.Options) string {
	switch {
	case len(o.TrustedOperators) > 0 || len(o.TrustedKeys) > 0:
		return "operator JWTs"
	case o.AuthCallout != nil:
		return "an auth callout"
	case o.CustomClientAuthentication != nil:
		return "custom authentication"
	}
	return ""
}

// credentialAuth names what clients must present under o (apart from a
// TLS client certificate), or returns "" if nothing.
func credentialAuth(o *server.Options) string {
	if a := externalAuth(o); a != "" {
		return a
	}
	switch {
	case len(o.Users) > 0 || len(o.Nkeys) > 0:
		return "users or nkeys"
	case o.Username != "":
		return "a user and password"
	case o.Authorization != "":
		return "a token"
	}
	return ""
}

// acceptedBy reports whether o accepts User/Password and Token as they
// are, e.g. a config file's token repeated in EVALGATE_SERVER_TOKEN.
func (s *Server) acceptedBy(o *server.Options) bool {
	if s.opts.User == "" && s.opts.Token == "" {
		return true
	}
	if s.opts.Token != "" && o.Authorization != s.opts.Token {
		return false
	}
	if s.opts.User == "" || o.Username == s.opts.User && o.Password == s.opts.Password {
		return true
	}
	for _, u := range o.Users {
		if u.Username == s.opts.User && u.Password == s.opts.Password {
			return true
		}
	}
	return false
}

// admitsAnonymous says how clients get in without credentials under o, or
// returns "" if they cannot.
func admitsAnonymous(o *server.Options) string {
	if o.NoAuthUser != "" {
		return fmt.Sprintf("no_auth_user %q admits clients without credentials", o.NoAuthUser)
	}
	if credentialAuth(o) == "" && !(o.TLSVerify && o.TLSConfig != nil) {
		return "no client authentication is configured"
	}
	return ""
}

// addInternalUser adds the internal user to o when clients need
// credentials, or records why it cannot. Called with mu held or before
// the server is shared.
func (s *Server) addInternalUser(o *server.Options) error {
	s.internal, s.noUser = nil, nil
	if credentialAuth(o) == "" {
		return nil // in-process connections skip TLS: nothing to present
	}
	if auth := externalAuth(o); auth != "" {
		s.noUser = fmt.Errorf("%w: clients are authenticated by %s", ErrNoInternalUser, auth)
		return nil
	}
	acc, err := internalAccount(o)
	if err != nil {
		s.noUser = err
		return nil
	}
	pub, err := s.admin.PublicKey()
	if err != nil {
		return fmt.Errorf("internal nkey: %w", err)
	}
	o.Nkeys = append(o.Nkeys, &server.NkeyUser{
		Nkey:    pub,
		Account: acc,
		// jwt.ConnectionTypeInProcess: the key is useless over the network.
		AllowedConnectionTypes: map[string]struct{}{"IN_PROCESS": {}},
		Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{"$JS.API.>"}},
			Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>"}},
		},
	})
	s.internal = &InternalUser{Nkey: pub, Sign: s.admin.Sign}
	return nil
}

// internalAccount is the account the configured users share, outside the
// system account: the one the evalgate streams belong in. nil is the
// global account.
func internalAccount(o *server.Options) (*server.Account, error) {
	accounts := userAccounts(o)
	if len(accounts) > 1 {
		names := slices.Sorted(maps.Keys(accounts))
		return nil, fmt.Errorf("%w: users are in several accounts (%s), so the one for the evalgate streams is not known",
			ErrNoInternalUser, strings.Join(names, ", "))
	}
	for _, a := range accounts {
		return a, nil
	}
	return nil, nil
}

// userAccounts maps the names of the accounts o's users and nkeys are in,
// outside the system account, to the accounts (nil for the global one).
func userAccounts(o *server.Options) map[string]*server.Account {
	sys := o.SystemAccount
	if sys == "" {
		sys = server.DEFAULT_SYSTEM_ACCOUNT
	}
	accounts := map[string]*server.Account{}
	note := func(a *server.Account) {
		name := server.DEFAULT_GLOBAL_ACCOUNT
		if a != nil {
			name = a.Name
		}
		if name != sys {
			accounts[name] = a
		}
	}
	for _, u := range o.Users {
		note(u.Account)
	}
	for _, u := range o.Nkeys {
		note(u.Account)
	}
	return accounts
}

// checkJetStream returns a *NoJetStreamError when none of the accounts
// evalgate's clients can land in under o has JetStream on ns (a config
// file that defines accounts enables it only where it says so). Accounts
// decided outside o (operator JWTs, an auth callout) are not checked.
func (s *Server) checkJetStream(ns *server.Server, o *server.Options) error {
	if externalAuth(o) != "" {
		return nil
	}
	names := slices.Sorted(maps.Keys(userAccounts(o)))
	if len(names) == 0 {
		names = []string{server.DEFAULT_GLOBAL_ACCOUNT} // no users, or a token
	}
	for _, name := range names {
		acc := ns.GlobalAccount()
		if name != server.DEFAULT_GLOBAL_ACCOUNT {
			var err error
			if acc, err = ns.LookupAccount(name); err != nil {
				continue
			}
		}
		if acc.JetStreamEnabled() {
			return nil
		}
	}
	return &NoJetStreamError{Accounts: names, ConfigFile: s.opts.ConfigFile}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) start() error {
	o, err := s.serverOptions()
	if err != nil {
		return err
	}
	if err := checkStore(o.StoreDir, true); err != nil {
		return err
	}
	ns, err := server.NewServer(o)
	if err != nil {
		return optionsError{err: fmt.Errorf("start nats server: %w", err)}
	}
	// nats-server reports why it cannot start only in its log (and would
	// exit the process there if it ran alone): catch that. Start returns
	// after such a failure, or once all is started.
	logs := &logAdapter{l: zerolog.Nop()}
	if s.opts.Logger != nil {
		logs.l = *s.opts.Logger
	}
	ns.SetLoggerV2(logs, false, false, false)
	started := make(chan struct{})
	go func() {
		defer close(started)
		ns.Start()
	}()
	deadline := time.Now().Add(readyTimeout)
	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case <-started:
	case <-timer.C:
	}
	if _, fatal := logs.failure(); fatal || !ns.ReadyForConnections(time.Until(deadline)) {
		ns.Shutdown()
		switch msg, fatal := logs.failure(); {
		case fatal:
			return fmt.Errorf("start nats server: %s", msg)
		case msg != "":
			return fmt.Errorf("start nats server: not ready after %s (last error: %s)", readyTimeout, msg)
		}
		return fmt.Errorf("start nats server: not ready after %s", readyTimeout)
	}
	if err := s.checkJetStream(ns, o); err != nil {
		ns.Shutdown()
		return err
	}
	if addr := ns.Addr(); addr != nil {
		if ta, ok := addr.(*net.TCPAddr); ok {
			s.port = ta.Port
		}
	}
	s.live.Store(ns)
	return nil
}

// InProcessConn implements nats.InProcessConnProvider, always against the
// live server, so in-process clients reconnect after Restart.
func (s *Server) InProcessConn() (net.Conn, error) {
	ns := s.live.Load()
	if ns == nil {
		return nil, errors.New("nats server is not running")
	}
	return ns.InProcessConn()
}

// ClientURL returns the URL TCP clients connect to, or "" without a
// listener.
func (s *Server) ClientURL() string {
	s.mu.Lock()
	listens := s.listens
	s.mu.Unlock()
	if !listens {
		return ""
	}
	ns := s.live.Load()
	if ns == nil {
		return ""
	}
	return ns.ClientURL()
}

// Ready reports whether the server is up with JetStream enabled and
// ready, by nats-server's own health check (in a cluster: a meta leader
// known, the streams and consumers current): nil, or why not. Safe for
// concurrent use.
func (s *Server) Ready() error {
	ns := s.live.Load()
	if ns == nil {
		return errors.New("nats server is not running")
	}
	if !ns.JetStreamEnabled() {
		return errors.New("jetstream is not enabled")
	}
	hs := ns.Healthz(&server.HealthzOptions{})
	if hs.Status != "ok" {
		if hs.Error != "" {
			return fmt.Errorf("jetstream not ready: %s", hs.Error)
		}
		return fmt.Errorf("jetstream not ready: %s", hs.Status)
	}
	return nil
}

// Restart shuts the server down and starts it again on the same store and
// port, as a process restart would (the file store is reopened).
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ns := s.live.Swap(nil); ns != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
	}
	return s.start()
}

// Shutdown stops the server gracefully. It is safe to call twice.
func (s *Server) Shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ns := s.live.Swap(nil); ns != nil {
		ns.Shutdown()
		ns.WaitForShutdown()
	}
}

// logAdapter forwards server log lines to zerolog and keeps the first
// fatal error, or else the last error, for Start to report.
type logAdapter struct {
	l zerolog.Logger

	mu      sync.Mutex
	failMsg string // guarded by mu
	fatal   bool   // guarded by mu; failMsg is from Fatalf
}

// failure returns the first fatal error logged (fatal true), else the last
// error, or "".
func (a *logAdapter) failure() (msg string, fatal bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.failMsg, a.fatal
}

func (a *logAdapter) note(msg string, fatal bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.fatal {
		a.failMsg, a.fatal = msg, fatal
	}
}

func (a *logAdapter) Noticef(format string, v ...any) { a.l.Debug().Msgf(format, v...) }
func (a *logAdapter) Warnf(format string, v ...any)   { a.l.Warn().Msgf(format, v...) }
func (a *logAdapter) Debugf(format string, v ...any)  { a.l.Debug().Msgf(format, v...) }
func (a *logAdapter) Tracef(format string, v ...any)  { a.l.Trace().Msgf(format, v...) }

func (a *logAdapter) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	a.note(msg, true)
	a.l.Error().Msg(msg)
}

func (a *logAdapter) Errorf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	a.note(msg, false)
	a.l.Error().Msg(msg)
}
