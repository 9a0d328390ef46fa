package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"forgehooks.dev/forgehooks/webhooks"
)

// startAuthNATS runs a nats-server with JetStream on 127.0.0.1, configured
// by configure (users, nkeys, operator, TLS), until the test ends, and
// returns its host:port.
func startAuthNATS(t *testing.T, configure func(*server.Options)) string {
	t.Helper()
	o := &server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT,
		JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true,
	}
	configure(o)
	ns, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(ns.Addr().(*net.TCPAddr).Port))
}

// writeFile writes data to name in dir, readable by its owner only, and
// returns its path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// operatorMode configures o for JWT authentication (operator, system
// account and an account with JetStream) and returns a user's credentials
// file's contents.
func operatorMode(t *testing.T, o *server.Options) []byte {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	okp, err := nkeys.CreateOperator()
	must(err)
	opub, err := okp.PublicKey()
	must(err)
	res := &server.MemAccResolver{}
	account := func(name string, js bool) (nkeys.KeyPair, string) {
		kp, err := nkeys.CreateAccount()
		must(err)
		pub, err := kp.PublicKey()
		must(err)
		ac := jwt.NewAccountClaims(pub)
		ac.Name = name
		if js {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: -1, DiskStorage: -1, Streams: -1, Consumer: -1}
		}
		tok, err := ac.Encode(okp)
		must(err)
		must(res.Store(pub, tok))
		return kp, pub
	}
	_, sysPub := account("SYS", false)
	akp, _ := account("APP", true)
	oc := jwt.NewOperatorClaims(opub)
	oc.SystemAccount = sysPub
	if _, err := oc.Encode(okp); err != nil {
		t.Fatal(err)
	}
	o.TrustedOperators = []*jwt.OperatorClaims{oc}
	o.AccountResolver = res
	o.SystemAccount = sysPub

	ukp, err := nkeys.CreateUser()
	must(err)
	upub, err := ukp.PublicKey()
	must(err)
	seed, err := ukp.Seed()
	must(err)
	uc := jwt.NewUserClaims(upub)
	tok, err := uc.Encode(akp)
	must(err)
	creds, err := jwt.FormatUserConfig(tok, seed)
	must(err)
	return creds
}

// testPKI is a CA and the server and client certificates it signed, as PEM
// files in a directory.
type testPKI struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

// newTestPKI makes a CA, a certificate for 127.0.0.1 and a client
// certificate, written as PEM files in dir.
func newTestPKI(t *testing.T, dir string) testPKI {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	now := time.Now()
	caKey := key()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "forgehooks test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	var p testPKI
	p.ca = writeFile(t, dir, "ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage) (string, string) {
		k := key()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return writeFile(t, dir, name+".pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
			writeFile(t, dir, name+"-key.pem", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
	}
	p.serverCert, p.serverKey = leaf(2, "server", x509.ExtKeyUsageServerAuth)
	p.clientCert, p.clientKey = leaf(3, "client", x509.ExtKeyUsageClientAuth)
	return p
}

// serverTLS is the server's side of p: its certificate, and clients'
// certificates required and checked against the CA.
func (p testPKI) serverTLS(t *testing.T) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(p.serverCert, p.serverKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	b, err := os.ReadFile(p.ca)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(b)
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
}

// TestServeNATSAuth: serve --nats, and inbox ls --nats, against a
// nats-server that requires each way of authenticating (a credentials
// file, an nkey, a user and password from the environment over mutual
// TLS): with the credentials a delivery is stored, handled and listed;
// without them serve does not start.
func TestServeNATSAuth(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// setup configures the server and returns the flags and
		// environment that authenticate to it.
		setup func(t *testing.T, dir string, o *server.Options) ([]string, map[string]string)
	}{
		{"creds", func(t *testing.T, dir string, o *server.Options) ([]string, map[string]string) {
			return []string{"--nats-creds", writeFile(t, dir, "user.creds", operatorMode(t, o))}, nil
		}},
		{"nkey", func(t *testing.T, dir string, o *server.Options) ([]string, map[string]string) {
			kp, err := nkeys.CreateUser()
			if err != nil {
				t.Fatal(err)
			}
			pub, _ := kp.PublicKey()
			seed, _ := kp.Seed()
			o.Nkeys = []*server.NkeyUser{{Nkey: pub}}
			return []string{"--nats-nkey", writeFile(t, dir, "user.nk", seed)}, nil
		}},
		{"tls and user from the environment", func(t *testing.T, dir string, o *server.Options) ([]string, map[string]string) {
			p := newTestPKI(t, dir)
			o.TLS, o.TLSVerify, o.TLSConfig, o.TLSTimeout = true, true, p.serverTLS(t), 5
			o.Users = []*server.User{{Username: "hooks", Password: "tls-env-password"}}
			return []string{"--nats-tls-ca", p.ca, "--nats-tls-cert", p.clientCert, "--nats-tls-key", p.clientKey},
				map[string]string{natsUserEnv: "hooks", natsPasswordEnv: "tls-env-password"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var flags []string
			var env map[string]string
			addr := startAuthNATS(t, func(o *server.Options) { flags, env = tc.setup(t, dir, o) })
			url := "nats://" + addr
			if strings.HasPrefix(tc.name, "tls") {
				url = "tls://" + addr
			}
			base := []string{"--nats", url, "--replicas", "1"}

			// Without the credentials (the CA alone, for TLS), the server refuses.
			bare := append([]string{"serve", "--addr", "127.0.0.1:0", "--secret", testSecret}, base...)
			if strings.HasPrefix(tc.name, "tls") {
				bare = append(bare, "--nats-tls-ca", flags[1])
			}
			if code, _, errOut := runCmd(t, "", nil, bare...); code == exitOK || !strings.Contains(strings.ToLower(errOut), "nats") {
				t.Fatalf("serve without credentials: exit %d, %s; want a NATS error", code, errOut)
			}

			rec := newReceived()
			getenv := func(k string) string { return env[k] }
			args := append(append([]string{"serve", "--addr", "127.0.0.1:0", "--secret", testSecret}, base...), flags...)
			sv := start(t, &cli{setup: rec.setup, getenv: getenv}, args...)
			id := "auth-" + strings.ReplaceAll(tc.name, " ", "-")
			body := []byte(`{"action":"opened","issue":{"number":1},"repository":{"full_name":"o/r"},"n":"` + id + `"}`)
			if code, ans := deliver(t, "http://"+sv.addr+webhooks.DefaultPath, "issues", id, body, nil); code != 202 {
				t.Fatalf("delivery: %d %s", code, ans)
			}
			rec.waitFor(t, id)
			if code := sv.stop(); code != exitOK {
				t.Fatalf("serve exited %d: %s", code, sv.stderr)
			}
			ls := append(append([]string{"inbox", "ls", "--json"}, base[:2]...), flags...)
			code, out, errOut := runCmd(t, "", env, ls...)
			if code != exitOK || !strings.Contains(out, `"id":"`+id+`"`) {
				t.Fatalf("inbox ls: exit %d, %s %s; want %s listed", code, out, errOut, id)
			}
		})
	}
}

// TestNATSURLPasswordNeverPrinted: a password in --nats's URL authenticates
// serve, work and the inbox command, and no line they print, failing or
// not, contains it.
func TestNATSURLPasswordNeverPrinted(t *testing.T) {
	t.Parallel()
	const pass = "url-secret-3f9a"
	addr := startAuthNATS(t, func(o *server.Options) {
		o.Users = []*server.User{{Username: "hooks", Password: pass}}
	})
	good := "nats://hooks:" + pass + "@" + addr
	rec := newReceived()
	sv := start(t, &cli{setup: rec.setup}, "serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--nats", good, "--replicas", "1")
	body := []byte(`{"action":"opened","issue":{"number":1},"repository":{"full_name":"o/r"},"n":"url"}`)
	if code, ans := deliver(t, "http://"+sv.addr+webhooks.DefaultPath, "issues", "url-1", body, nil); code != 202 {
		t.Fatalf("delivery: %d %s", code, ans)
	}
	rec.waitFor(t, "url-1")
	sv.stop()
	outputs := map[string]string{"serve": sv.stderr.String()}
	if !strings.Contains(outputs["serve"], "redacted@"+addr) {
		t.Errorf("serve's log does not name the store redacted:\n%s", outputs["serve"])
	}
	for _, tc := range []struct {
		name string
		args []string
		ok   bool
	}{
		{"ls", []string{"inbox", "ls", "--json", "--nats", good}, true},
		{"show", []string{"inbox", "show", "url-1", "--nats", good}, true},
		{"ls wrong password", []string{"inbox", "ls", "--nats", "nats://hooks:" + pass + "-wrong@" + addr}, false},
		{"ls refused", []string{"inbox", "ls", "--nats", "nats://hooks:" + pass + "@127.0.0.1:1"}, false},
		{"ls two urls", []string{"inbox", "ls", "--nats", good + ",nats://other:" + pass + "@" + addr}, false},
		{"work refused", []string{"work", "--forward", "http://127.0.0.1:9/x", "--nats", "nats://hooks:" + pass + "@127.0.0.1:1"}, false},
		{"serve bad url", []string{"serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--nats", "nats://hooks:" + pass + "@[::1"}, false},
	} {
		code, out, errOut := runCmd(t, "", nil, tc.args...)
		if (code == exitOK) != tc.ok {
			t.Errorf("%s: exit %d, want ok %v: %s %s", tc.name, code, tc.ok, out, errOut)
		}
		outputs[tc.name] = out + errOut
	}
	if !strings.Contains(outputs["ls"], `"id":"url-1"`) {
		t.Errorf("inbox ls does not list url-1: %s", outputs["ls"])
	}
	for name, out := range outputs {
		for i, line := range strings.Split(out, "\n") {
			if strings.Contains(line, pass) {
				t.Errorf("%s: line %d prints the password: %s", name, i+1, line)
			}
		}
	}
}

// TestNATSFlagsChecked: credentials flags that conflict, come without
// --nats or lack their other half exit 2 naming the flags, before any
// connection.
func TestNATSFlagsChecked(t *testing.T) {
	t.Parallel()
	work := []string{"work", "--forward", "http://127.0.0.1:9/x", "--nats", "nats://127.0.0.1:1"}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"creds and nkey", append(work, "--nats-creds", "a", "--nats-nkey", "b"), nil, "exclude each other"},
		{"creds and user", append(work, "--nats-creds", "a"), map[string]string{natsUserEnv: "u"}, "exclude each other"},
		{"password alone", work, map[string]string{natsPasswordEnv: "p-secret"}, natsPasswordEnv + " is set without " + natsUserEnv},
		{"cert without key", append(work, "--nats-tls-cert", "c.pem"), nil, "--nats-tls-cert and --nats-tls-key go together"},
		{"without --nats", []string{"serve", "--addr", "127.0.0.1:0", "--secret", testSecret, "--inbox", t.TempDir(), "--nats-creds", "a"}, nil, "need --nats"},
	} {
		code, _, errOut := runCmd(t, "", tc.env, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "p-secret") {
			t.Errorf("%s: exit %d, %q; want %d and %q", tc.name, code, errOut, exitUsage, tc.want)
		}
	}
}
