package redlock_test

import (
	"context"
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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/quorum"
	"github.com/seed818c56a1/quorumlock/redlock"
)

// setupBound bounds how long Lock may take to give up on masters that
// refuse every connection (a wrong password, a wrong DB): a few node
// timeouts' worth of work on a loaded two-core machine, far below the
// default 30 s deadline such a Lock used to wait out.
const setupBound = 5 * time.Second

// handshakes gives the first call to each master — a dial, a handshake of
// several round trips, a TLS certificate check — a second: under -race on
// a loaded machine it may outlast the tests' short node timeout, and a
// vote that times out names its cause only once a probe found it.
var handshakes = redlock.WithNodeTimeout(time.Second)

// requirePass makes the given masters require password, and undoes it when
// the test ends so that the lab's cleanup can still talk to them.
func requirePass(t *testing.T, ctx context.Context, l *redislab.Lab, password string, idx ...int) {
	t.Helper()
	for _, i := range idx {
		addr := l.Nodes[i].Addr()
		c := redis.NewClient(&redis.Options{Addr: addr})
		err := c.ConfigSet(ctx, "requirepass", password).Err()
		c.Close()
		if err != nil {
			t.Fatalf("node %d: CONFIG SET requirepass: %v", i, err)
		}
		t.Cleanup(func() {
			c := redis.NewClient(&redis.Options{Addr: addr, Password: password})
			defer c.Close()
			_ = c.ConfigSet(context.Background(), "requirepass", "").Err()
		})
	}
}

// setupRefused checks what Lock says when the connections to the given
// masters cannot be set up: it returns within setupBound, not at its
// deadline, with ErrNotObtained, and each of those masters' votes (when
// in) failed with an error naming want, the server's real answer.
func setupRefused(t *testing.T, c *redlock.Client, want string, idx ...int) {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	start := time.Now()
	_, err := c.Lock(ctx, "setup")
	took := time.Since(start)
	if !errors.Is(err, redlock.ErrNotObtained) {
		t.Fatalf("Lock = %v, want ErrNotObtained", err)
	}
	if took > setupBound {
		t.Errorf("Lock took %v to give up, want at most %v: no wait can mend the connections", took, setupBound)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("Lock's error does not name %s: %v", want, err)
	}
	requireVotes(t, votesOf(t, err), "failed naming "+want, func(v redlock.NodeVote) bool {
		return v.Outcome == quorum.Failed && strings.Contains(v.Err.Error(), want)
	}, 1, idx...)
	t.Logf("Lock gave up after %v: %v", took.Round(time.Millisecond), err)
}

// A wrong password: every vote says WRONGPASS, the server's own answer, and
// Lock returns at once since no majority can ever count.
func TestLockWrongPassword(t *testing.T) {
	l := redislab.Start(t, 3)
	l.RequireControl(t)
	ctx := ctxFor(t, 30*time.Second)
	requirePass(t, ctx, l, "right", 0, 1, 2)
	nodes := l.Clients(t, func(o *redis.Options) { o.Password = "wrong" })
	if err := nodes[0].Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("PING with the wrong password = %v, want WRONGPASS", err)
	}
	setupRefused(t, newClient(t, nodes, handshakes), "WRONGPASS", 0, 1, 2)
}

// No password given to masters that require one: NOAUTH, as lasting.
func TestLockNoPassword(t *testing.T) {
	l := redislab.Start(t, 3)
	l.RequireControl(t)
	ctx := ctxFor(t, 30*time.Second)
	requirePass(t, ctx, l, "right", 0, 1)
	setupRefused(t, newClient(t, l.Clients(t), handshakes), "NOAUTH", 0, 1)
}

// A DB the masters do not have (16 databases, DB 99): SELECT's error —
// through a script call, or through ROLE, which vets each master when
// restart detection is off.
func TestLockWrongDB(t *testing.T) {
	l := redislab.Start(t, 3)
	nodes := l.Clients(t, func(o *redis.Options) { o.DB = 99 })
	setupRefused(t, newClient(t, nodes, handshakes), "DB index is out of range", 0, 1, 2)
	setupRefused(t, newClient(t, nodes, handshakes, redlock.WithRestartGuard(0)), "DB index is out of range", 0, 1, 2)
}

// Masters that speak TLS with a certificate the client does not trust:
// the handshake's own error (x509), lasting.
func TestLockTLSCertificateRefused(t *testing.T) {
	l := redislab.Start(t, 3)
	ctx := ctxFor(t, 30*time.Second)
	cert, key := selfSigned(t)
	nodes := make([]redis.UniversalClient, len(l.Nodes))
	for i, n := range l.Nodes {
		addr := serveTLS(t, ctx, n.Addr(), cert, key)
		nodes[i] = redis.NewClient(&redis.Options{Addr: addr, TLSConfig: &tls.Config{ServerName: "localhost", MinVersion: tls.VersionTLS12}})
		t.Cleanup(func() { nodes[i].Close() })
	}
	setupRefused(t, newClient(t, nodes, handshakes), "x509", 0, 1, 2)
}

// selfSigned writes a self-signed certificate for localhost and its key in
// a temporary directory, and returns their paths.
func selfSigned(t *testing.T) (cert, key string) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &priv.PublicKey, priv)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, key = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for path, block := range map[string]*pem.Block{cert: {Type: "CERTIFICATE", Bytes: der}, key: {Type: "PRIVATE KEY", Bytes: pk}} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return cert, key
}

// serveTLS makes the master at addr listen for TLS too, with cert and key
// and no client certificates, and returns the TLS port's address.
func serveTLS(t *testing.T, ctx context.Context, addr, cert, key string) string {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	if err := c.ConfigSet(ctx, "tls-cert-file", cert).Err(); err != nil {
		t.Fatalf("CONFIG SET tls-cert-file: %v", err)
	}
	if err := c.ConfigSet(ctx, "tls-key-file", key).Err(); err != nil {
		t.Fatalf("CONFIG SET tls-key-file: %v", err)
	}
	if err := c.ConfigSet(ctx, "tls-auth-clients", "no").Err(); err != nil {
		t.Fatalf("CONFIG SET tls-auth-clients: %v", err)
	}
	for range 20 { // a free port, taken between our look and the server's
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		if err := c.ConfigSet(ctx, "tls-port", strconv.Itoa(port)).Err(); err == nil {
			return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		}
	}
	t.Fatal("no free port for TLS")
	return ""
}
