package testenv

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drovehq/drove/executor/nodeid"
)

// The identities below are for negative tests of the streams of moves:
// dir is a nodeid.Bundle directory (dir/ca, dir/NODE).

// ExpiredIdentity issues node a certificate of the CA in dir that is
// valid for one second, in dir/NODE-expired, and returns its files once
// it has expired (x509 times are whole seconds, so at most two seconds).
func ExpiredIdentity(t testing.TB, dir, node string) nodeid.Files {
	t.Helper()
	out := filepath.Join(dir, node+"-expired")
	if err := nodeid.IssueFor(filepath.Join(dir, "ca"), node, out, time.Second); err != nil {
		t.Fatal(err)
	}
	f := nodeid.FilesIn(out, node)
	b, err := os.ReadFile(f.Cert)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	// Waiting for the clock to pass a time is not synchronising with
	// another party: nothing else can make it happen sooner. A whole
	// second past it: GnuTLS (QEMU's TLS) compares in whole seconds, so
	// within NotAfter's own second it still takes the certificate (seen:
	// a move went through with it).
	if d := time.Until(c.NotAfter); d >= -time.Second {
		time.Sleep(d + 1100*time.Millisecond)
	}
	return f
}

// Revoke revokes node's certificate in dir/NODE with the CA in dir/ca,
// as `drove ca revoke` does, and copies the CA's revocation list beside
// the ca.crt of each node of copyTo, as an operator would.
func Revoke(t testing.TB, dir, node string, copyTo ...string) {
	t.Helper()
	ca := filepath.Join(dir, "ca")
	if _, err := nodeid.Revoke(ca, node, nodeid.FilesIn(filepath.Join(dir, node), node).Cert); err != nil {
		t.Fatal(err)
	}
	crl, err := os.ReadFile(filepath.Join(ca, nodeid.CRL))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range copyTo {
		if err := os.WriteFile(nodeid.FilesIn(filepath.Join(dir, n), n).CRL, crl, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
