package main

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor/nodeid"
)

// TestCommandsTalkToASecuredKafka: a command (verify, which reads every
// topic) given the broker's CA and SCRAM credentials by environment and
// flags reads the log over TLS; with another CA it refuses the broker,
// with a wrong password it says SASL refused, and neither error nor
// output shows the password.
//
// kfake: a SCRAM user of the test's choosing on a TLS listener. Apache
// Kafka keeps SCRAM users in its metadata, made when its storage is
// formatted; the same commands over SASL_SSL with PLAIN users on a real
// broker are TestComposeDeploymentOnARealBroker's.
func TestCommandsTalkToASecuredKafka(t *testing.T) {
	dir := t.TempDir()
	// The broker's certificate, from a Drove CA: it names "localhost".
	if _, err := nodeid.Bundle(dir, "localhost"); err != nil {
		t.Fatal(err)
	}
	f := nodeid.FilesIn(filepath.Join(dir, "localhost"), "localhost")
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		t.Fatal(err)
	}
	const password = "pw-7c1d0e-never-shown"
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, events.Topics()...),
		kfake.TLS(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}),
		kfake.EnableSASL(), kfake.Superuser(kafka.MechanismScramSHA512, "drove", password))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pwFile := filepath.Join(dir, "kafka.pw")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	otherDir := t.TempDir()
	if _, err := nodeid.Bundle(otherDir, "x"); err != nil {
		t.Fatal(err)
	}
	otherCA := filepath.Join(otherDir, "x", nodeid.CACert)
	t.Setenv("KAFKA_SASL_MECHANISM", "SCRAM-SHA-512")
	t.Setenv("KAFKA_SASL_USER", "drove")
	base := []string{"verify", "--brokers", c.ListenAddrs()[0], "--kafka-server-name", "localhost", "--timeout", "60s"}

	code, out, errs := run(t, "", append(base, "--kafka-ca", f.CA, "--kafka-sasl-password-file", pwFile)...)
	if code != exitOK {
		t.Fatalf("verify over TLS+SCRAM: exit %d\n%s\n%s", code, out, errs)
	}

	code, _, errs = run(t, "", append(base, "--kafka-ca", otherCA, "--kafka-sasl-password-file", pwFile)...)
	if code == exitOK || !strings.Contains(errs, "TLS with the broker failed") {
		t.Fatalf("verify against a broker of another CA: exit %d, stderr %q", code, errs)
	}

	t.Setenv("KAFKA_SASL_PASSWORD", "wrong-pw-3b9f")
	code, out, errs = run(t, "", append(base, "--kafka-ca", f.CA)...)
	if code == exitOK || !strings.Contains(errs, "SASL authentication refused") {
		t.Fatalf("verify with a wrong password: exit %d, stderr %q", code, errs)
	}
	for _, s := range []string{password, "wrong-pw-3b9f"} {
		if strings.Contains(out+errs, s) {
			t.Fatalf("a password shows in the output:\n%s\n%s", out, errs)
		}
	}

	if err := os.Chmod(pwFile, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = run(t, "", append(base, "--kafka-ca", f.CA, "--kafka-sasl-password-file", pwFile)...)
	if code == exitOK || !strings.Contains(errs, "readable by group or others") {
		t.Fatalf("verify with a password file others can read: exit %d, stderr %q", code, errs)
	}
}
