package main

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/drovehq/drove/executor/nodeid"
)

// TestCAIssuesWhatTheExecutorTakes: `drove ca init` and `drove ca issue`
// make the files `drove executor` takes, and the executor refuses a
// certificate of another node, a key others can read, and a networked
// driver with neither certificates nor --plain-transfer.
func TestCAIssuesWhatTheExecutorTakes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	if code, _, errs := run(t, "", "ca", "init", "--dir", dir); code != 0 {
		t.Fatalf("ca init: exit %d: %s", code, errs)
	}
	if code, _, errs := run(t, "", "ca", "init", "--dir", dir); code == 0 || !strings.Contains(errs, "exists") {
		t.Fatalf("second ca init: exit %d, %q; want a refusal to overwrite", code, errs)
	}
	code, out, errs := run(t, "", "ca", "issue", "--dir", dir, "n1")
	if code != 0 || !strings.Contains(out, "--tls-cert") {
		t.Fatalf("ca issue: exit %d, %q, %q", code, out, errs)
	}
	n1 := filepath.Join(dir, "n1")
	tls := []string{"--tls-cert", filepath.Join(n1, "n1.crt"), "--tls-key", filepath.Join(n1, "n1.key"),
		"--tls-ca", filepath.Join(n1, "ca.crt"), "--transfer-secret", filepath.Join(n1, "transfer.secret")}
	proc := []string{"--driver", "process", "--command", "sleep {instance}", "--state-dir", t.TempDir()}
	cases := []struct {
		args []string
		want string
	}{
		{append([]string{"executor", "--node", "n2"}, tls...), `names node "n1", not --node "n2"`},
		{append(append([]string{"executor", "--node", "n1"}, proc...), "--tls-cert", "x"), "go together"},
		{append(append([]string{"executor", "--node", "n1"}, proc...), "--brokers", "127.0.0.1:1"), "--plain-transfer"},
	}
	for _, tc := range cases {
		code, _, errs := run(t, "", tc.args...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want it to say %q", tc.args, code, errs, tc.want)
		}
	}
	if err := os.Chmod(filepath.Join(n1, "n1.key"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = run(t, "", append([]string{"executor", "--node", "n1"}, tls...)...)
	if code == 0 || !strings.Contains(errs, "readable by group or others") {
		t.Errorf("executor with a 0644 key: exit %d, stderr %q", code, errs)
	}
}

// TestCARevoke: `drove ca revoke NODE` lists NODE's certificate in the
// CA's ca.crl, signed by the CA, refuses a certificate of another node
// given for NODE (nothing written), and a node issued afterwards gets the
// list in its files.
func TestCARevoke(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	for _, args := range [][]string{{"init"}, {"issue", "n1"}, {"issue", "n2"}} {
		if code, _, errs := run(t, "", append([]string{"ca", "--dir", dir}, args...)...); code != 0 {
			t.Fatalf("ca %v: exit %d: %s", args, code, errs)
		}
	}
	crl := filepath.Join(dir, nodeid.CRL)
	code, _, errs := run(t, "", "ca", "--dir", dir, "--cert", filepath.Join(dir, "n2", "n2.crt"), "revoke", "n1")
	if _, err := os.Stat(crl); code == 0 || !strings.Contains(errs, `names node "n2", not "n1"`) || err == nil {
		t.Fatalf("revoke n1 with n2's certificate: exit %d, %q, list written: %v", code, errs, err == nil)
	}
	code, out, errs := run(t, "", "ca", "--dir", dir, "revoke", "n1")
	if code != 0 || !strings.Contains(out, "Revoked n1's certificate") {
		t.Fatalf("ca revoke n1: exit %d, %q, %q", code, out, errs)
	}
	b, err := os.ReadFile(crl)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	list, err := x509.ParseRevocationList(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := os.ReadFile(filepath.Join(dir, "n1", "n1.crt"))
	cblk, _ := pem.Decode(cb)
	cert, _ := x509.ParseCertificate(cblk.Bytes)
	if len(list.RevokedCertificateEntries) != 1 || list.RevokedCertificateEntries[0].SerialNumber.Cmp(cert.SerialNumber) != 0 {
		t.Fatalf("ca.crl lists %+v, want n1's serial %x", list.RevokedCertificateEntries, cert.SerialNumber)
	}
	if code, _, errs := run(t, "", "ca", "--dir", dir, "issue", "n3"); code != 0 {
		t.Fatalf("ca issue n3: %s", errs)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "n3", nodeid.CRL)); string(got) != string(b) {
		t.Error("n3's files do not hold the CA's revocation list")
	}
}
