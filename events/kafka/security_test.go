package kafka

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
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/drovehq/drove/events"
)

// testCA is a CA that signs a broker certificate for 127.0.0.1 and a
// client certificate; its files live in dir.
type testCA struct {
	dir    string
	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	caFile string
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	ca := &testCA{dir: t.TempDir(), cert: cert, key: key}
	ca.caFile = ca.write(t, "ca.crt", "CERTIFICATE", der, 0o644)
	return ca
}

func (ca *testCA) write(t *testing.T, name, kind string, der []byte, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(ca.dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

// issue signs a leaf; server certificates name 127.0.0.1.
func (ca *testCA) issue(t *testing.T, server bool) (tls.Certificate, string, string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	name := fmt.Sprintf("leaf-%d", tmpl.SerialNumber)
	certFile := ca.write(t, name+".crt", "CERTIFICATE", der, 0o644)
	keyFile := ca.write(t, name+".key", "EC PRIVATE KEY", kder, 0o600)
	c, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return c, certFile, keyFile
}

// These tests stay on kfake: SCRAM users and client certificates (mTLS)
// are one option each there, while Apache Kafka needs SCRAM credentials
// written at storage format (or through AlterUserScramCredentials) and a
// key store per listener, which deploy/apachekafka does not make. The
// real broker's refusals (SASL_AUTHENTICATION_FAILED for a wrong PLAIN
// password, a certificate of another CA) and PLAIN over TLS are proven on
// Apache Kafka by cmd/drove's TestComposeDeploymentOnARealBroker.

// secureCluster is a kfake broker with a TLS listener (certificate from
// ca; client certificates from ca required when mtls) and SASL users.
func secureCluster(t *testing.T, ca *testCA, mtls bool) Config {
	t.Helper()
	srv, _, _ := ca.issue(t, true)
	tc := &tls.Config{Certificates: []tls.Certificate{srv}, MinVersion: tls.VersionTLS12}
	if mtls {
		pool := x509.NewCertPool()
		pool.AddCert(ca.cert)
		tc.ClientCAs, tc.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(tc), kfake.EnableSASL(),
		kfake.Superuser(MechanismScramSHA512, "drove", "s3cret-scram-pw"),
		kfake.Superuser(MechanismPlain, "plainuser", "s3cret-plain-pw"),
		kfake.SeedTopics(1, events.TopicRequests))
	if err != nil {
		t.Fatalf("kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return Config{Brokers: c.ListenAddrs(), ClientID: "drove-test", TransactionalID: "test-" + t.Name(),
		FetchMaxWait: 100 * time.Millisecond, DialTimeout: 2 * time.Second}
}

// roundTrip appends one event and reads it back.
func roundTrip(t *testing.T, cfg Config) error {
	t.Helper()
	ctx := testContext(t)
	p, err := NewProducer(cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.Append(ctx, events.TopicRequests, event("req-tls")); err != nil {
		return err
	}
	recs, err := ReadAll(ctx, cfg, events.TopicRequests)
	if err == nil && len(recs) != 1 {
		t.Fatalf("read %d records, want 1", len(recs))
	}
	return err
}

func TestTLSAndSASLConnect(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	_, certFile, keyFile := ca.issue(t, false)
	tlsOK := TLS{CAFile: ca.caFile, CertFile: certFile, KeyFile: keyFile}
	var d net.Dialer
	for _, tc := range []struct {
		name string
		sasl SASL
		dial bool // through Config.Dial, as tests that cut clients off do
	}{
		{"SCRAM-SHA-512", SASL{Mechanism: MechanismScramSHA512, User: "drove", Password: "s3cret-scram-pw"}, false},
		{"PLAIN over TLS", SASL{Mechanism: "plain", User: "plainuser", Password: "s3cret-plain-pw"}, false},
		{"SCRAM-SHA-512 over Config.Dial", SASL{Mechanism: MechanismScramSHA512, User: "drove", Password: "s3cret-scram-pw"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := secureCluster(t, ca, true)
			cfg.TLS, cfg.SASL = tlsOK, tc.sasl
			if tc.dial {
				cfg.Dial = d.DialContext
			}
			cfg.TransactionalID = fmt.Sprintf("test-tls-%s-%v", tc.sasl.User, tc.dial)
			if err := roundTrip(t, cfg); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestTLSRefusesABrokerOfAnotherCA(t *testing.T) {
	t.Parallel()
	ca, other := newTestCA(t), newTestCA(t)
	cfg := secureCluster(t, ca, false)
	cfg.TLS = TLS{CAFile: other.caFile}
	cfg.SASL = SASL{Mechanism: MechanismScramSHA512, User: "drove", Password: "s3cret-scram-pw"}
	err := EnsureTopics(testContext(t), cfg, 1, events.TopicRequests)
	if !errors.Is(err, ErrTLS) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("EnsureTopics against a broker of another CA: %v; want ErrTLS naming the certificate", err)
	}
}

func TestSASLWrongPasswordIsAClearError(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	cfg := secureCluster(t, ca, false)
	cfg.TLS = TLS{CAFile: ca.caFile}
	cfg.SASL = SASL{Mechanism: MechanismScramSHA512, User: "drove", Password: "wrong-password-xyz"}
	// kfake refuses by closing the connection, which the client retries
	// (about 30 s) before it gives up; a real broker answers with
	// SASL_AUTHENTICATION_FAILED, which is not retried.
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	err := EnsureTopics(ctx, cfg, 1, events.TopicRequests)
	if !errors.Is(err, ErrAuth) {
		t.Fatalf("EnsureTopics with a wrong password: %v; want ErrAuth", err)
	}
	if strings.Contains(err.Error(), "wrong-password-xyz") {
		t.Fatalf("the error shows the password: %v", err)
	}
	if !strings.Contains(err.Error(), "drove") || !strings.Contains(err.Error(), MechanismScramSHA512) {
		t.Fatalf("the error does not say which user and mechanism: %v", err)
	}
}

func TestSecurityConfigProblems(t *testing.T) {
	t.Parallel()
	ca := newTestCA(t)
	_, certFile, keyFile := ca.issue(t, false)
	exposed := filepath.Join(t.TempDir(), "exposed.key")
	b, _ := os.ReadFile(keyFile)
	_ = os.WriteFile(exposed, b, 0o644)
	for _, tc := range []struct {
		name string
		tls  TLS
		sasl SASL
		want string
	}{
		{"PLAIN without TLS", TLS{}, SASL{Mechanism: "PLAIN", User: "u", Password: "hunter2-pw"}, "over TLS only"},
		{"unknown mechanism", TLS{}, SASL{Mechanism: "GSSAPI", User: "u", Password: "hunter2-pw"}, "unknown Mechanism"},
		{"no password", TLS{}, SASL{Mechanism: MechanismScramSHA512, User: "u"}, "needs a User and a Password"},
		{"password without mechanism", TLS{}, SASL{Password: "hunter2-pw"}, "without a Mechanism"},
		{"certificate without key", TLS{CertFile: certFile}, SASL{}, "go together"},
		{"missing CA file", TLS{CAFile: filepath.Join(t.TempDir(), "none.crt")}, SASL{}, "no such file"},
		{"key readable by others", TLS{CertFile: certFile, KeyFile: exposed}, SASL{}, "readable by group or others"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Config{Brokers: []string{"127.0.0.1:9092"}, TLS: tc.tls, SASL: tc.sasl}.Validate()
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v; want it to say %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "hunter2-pw") {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
	s := SASL{Mechanism: MechanismScramSHA512, User: "u", Password: "hunter2-pw"}
	if strings.Contains(s.String(), "hunter2") {
		t.Fatalf("SASL.String shows the password: %s", s)
	}
}
