package jsq

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// TestClientOptions checks that every credential and TLS setting reaches
// the nats.go option it stands for, and that a bad file is reported before
// any connection attempt.
func TestClientOptions(t *testing.T) {
	dir := t.TempDir()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	seedFile := writeFile(t, dir, "user.nk", string(seed))
	const fakeJWT = "eyJhbGciOiJlZDI1NTE5In0.e30.c2ln"
	credsFile := writeFile(t, dir, "user.creds", "-----BEGIN NATS USER JWT-----\n"+fakeJWT+
		"\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n"+string(seed)+"\n------END USER NKEY SEED------\n")
	caFile, certFile, keyFile := writeTLSFiles(t, dir)
	provider := inProcess{}
	nonce := []byte("nonce")
	signedByKP := func(t *testing.T, o *nats.Options) {
		t.Helper()
		if o.SignatureCB == nil {
			t.Fatal("no signature callback")
		}
		sig, err := o.SignatureCB(nonce)
		if err != nil {
			t.Fatal(err)
		}
		if err := kp.Verify(nonce, sig); err != nil {
			t.Fatalf("signature does not verify with the seed's key: %v", err)
		}
	}

	for _, tc := range []struct {
		name  string
		in    Options
		check func(*testing.T, *nats.Options)
		err   string // non-empty: clientOptions fails with this text
	}{
		{name: "nothing", check: func(t *testing.T, o *nats.Options) {
			if o.User != "" || o.Token != "" || o.Nkey != "" || o.UserJWT != nil || o.Secure || o.InProcessServer != nil {
				t.Errorf("options set without flags: %+v", o)
			}
		}},
		{name: "in-process", in: Options{InProcess: provider}, check: func(t *testing.T, o *nats.Options) {
			if o.InProcessServer != provider {
				t.Error("InProcessServer not set")
			}
		}},
		{name: "user and password", in: Options{User: "alice", Password: "s3cret"}, check: func(t *testing.T, o *nats.Options) {
			if o.User != "alice" || o.Password != "s3cret" {
				t.Errorf("user %q password %q", o.User, o.Password)
			}
		}},
		{name: "token", in: Options{Token: "t0ken"}, check: func(t *testing.T, o *nats.Options) {
			if o.Token != "t0ken" {
				t.Errorf("token %q", o.Token)
			}
		}},
		{name: "nkey seed file", in: Options{NkeySeedFile: seedFile}, check: func(t *testing.T, o *nats.Options) {
			if o.Nkey != pub {
				t.Errorf("nkey %q, want %q", o.Nkey, pub)
			}
			signedByKP(t, o)
		}},
		{name: "nkey in memory", in: Options{Nkey: pub, SignNonce: kp.Sign}, check: func(t *testing.T, o *nats.Options) {
			if o.Nkey != pub {
				t.Errorf("nkey %q, want %q", o.Nkey, pub)
			}
			signedByKP(t, o)
		}},
		{name: "creds file", in: Options{CredsFile: credsFile}, check: func(t *testing.T, o *nats.Options) {
			if o.UserJWT == nil {
				t.Fatal("no user JWT callback")
			}
			if jwt, err := o.UserJWT(); err != nil || jwt != fakeJWT {
				t.Errorf("user JWT %q, %v", jwt, err)
			}
			signedByKP(t, o)
		}},
		{name: "tls ca", in: Options{TLSCA: caFile}, check: func(t *testing.T, o *nats.Options) {
			if !o.Secure || o.TLSConfig == nil || o.TLSConfig.RootCAs == nil || o.TLSConfig.MinVersion != tls.VersionTLS12 {
				t.Errorf("secure %v, tls config %+v", o.Secure, o.TLSConfig)
			}
			if len(o.TLSConfig.Certificates) != 0 {
				t.Error("client certificate without --tls-cert")
			}
		}},
		{name: "mutual tls", in: Options{TLSCA: caFile, TLSCert: certFile, TLSKey: keyFile}, check: func(t *testing.T, o *nats.Options) {
			if !o.Secure || o.TLSConfig == nil || o.TLSConfig.RootCAs == nil || len(o.TLSConfig.Certificates) != 1 {
				t.Errorf("secure %v, tls config %+v", o.Secure, o.TLSConfig)
			}
		}},
		{name: "tls first", in: Options{TLSFirst: true}, check: func(t *testing.T, o *nats.Options) {
			if !o.TLSHandshakeFirst || !o.Secure {
				t.Errorf("handshake first %v, secure %v", o.TLSHandshakeFirst, o.Secure)
			}
		}},
		{name: "nkey without signer", in: Options{Nkey: pub}, err: "signing function"},
		{name: "missing creds file", in: Options{CredsFile: filepath.Join(dir, "nope.creds")}, err: "nope.creds"},
		{name: "missing nkey seed file", in: Options{NkeySeedFile: filepath.Join(dir, "nope.nk")}, err: "nope.nk"},
		{name: "ca without certificates", in: Options{TLSCA: seedFile}, err: "no certificates found"},
		{name: "key without certificate", in: Options{TLSKey: keyFile}, err: "both the certificate and the key"},
		{name: "certificate without key", in: Options{TLSCert: certFile}, err: "both the certificate and the key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts, err := clientOptions(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			o := nats.GetDefaultOptions()
			for _, opt := range opts {
				if err := opt(&o); err != nil {
					t.Fatal(err)
				}
			}
			tc.check(t, &o)
		})
	}
	if _, err := clientOptions(Options{CredsFile: filepath.Join(dir, "nope.creds")}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing creds file: %v, want os.ErrNotExist (a usage error, not a retry)", err)
	}
}

type inProcess struct{}

func (inProcess) InProcessConn() (net.Conn, error) { return nil, errors.New("not a server") }

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeTLSFiles writes a self-signed CA and a client certificate and key
// it signed.
func writeTLSFiles(t *testing.T, dir string) (ca, cert, key string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	clientKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	clientTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "worker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	clientDER, err := x509.CreateCertificate(rand.Reader, clientTmpl, caTmpl, &clientKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(clientKey)
	if err != nil {
		t.Fatal(err)
	}
	pemOf := func(typ string, b []byte) string { return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b})) }
	return writeFile(t, dir, "ca.pem", pemOf("CERTIFICATE", caDER)),
		writeFile(t, dir, "client.pem", pemOf("CERTIFICATE", clientDER)),
		writeFile(t, dir, "client-key.pem", pemOf("EC PRIVATE KEY", keyDER))
}

// TestConnectErrorClassification: the errors no retry can cure are marked
// so that callers stop at once.
func TestConnectErrorClassification(t *testing.T) {
	tcp := Options{URL: "nats://127.0.0.1:4222"}
	for _, tc := range []struct {
		err  error
		o    Options
		want error
	}{
		{nats.ErrAuthorization, tcp, ErrUnauthorized},
		{nats.ErrNkeysNotSupported, tcp, ErrUnauthorized},
		{errors.New("nats: authorization violation"), tcp, ErrUnauthorized},
		{nats.ErrSecureConnWanted, tcp, ErrInvalidOptions},
		{nats.ErrSecureConnRequired, tcp, ErrInvalidOptions},
		{errors.New("io: read/write on closed pipe"), Options{InProcess: inProcess{}}, ErrUnauthorized},
		{nats.ErrNoServers, tcp, nil},
	} {
		got := connectError(tc.o, tc.err)
		if !errors.Is(got, tc.err) && !strings.Contains(got.Error(), tc.err.Error()) {
			t.Errorf("%v: the error %v lost its cause", tc.err, got)
		}
		for _, sentinel := range []error{ErrUnauthorized, ErrInvalidOptions} {
			if errors.Is(got, sentinel) != (sentinel == tc.want) {
				t.Errorf("%v: errors.Is(%v, %v) = %v", tc.err, got, sentinel, !(sentinel == tc.want))
			}
		}
	}
}
