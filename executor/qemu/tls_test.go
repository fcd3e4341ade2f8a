package qemu_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/nodeid"
	"github.com/drovehq/drove/executor/qemu"
	"github.com/drovehq/drove/test/testenv"
)

// dialWithoutCertificate opens a TLS 1.3 stream to addr presenting no
// client certificate and reads from it: the error is the server's
// refusal (in TLS 1.3 the client learns of it at its first read).
func dialWithoutCertificate(ctx context.Context, addr string) error {
	var d tls.Dialer
	d.Config = &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true} //nolint:gosec // the server's refusal is what is tested
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	_, err = c.Read(make([]byte, 1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil // held open, not refused
	}
	return err
}

// pki issues a CA in a temporary directory and identities for nodes.
func pki(t *testing.T, nodes ...string) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := nodeid.Bundle(dir, nodes...); err != nil {
		t.Fatal(err)
	}
	return dir
}

// withTLS gives a node the identity of as from the pki in dir.
func withTLS(dir, as string) func(*qemu.Config) {
	return func(c *qemu.Config) { c.TLS = nodeid.FilesIn(filepath.Join(dir, as), as) }
}

// tlsMove migrates a FillOnce guest from a to b and returns Run's error
// and the source VM's pid. A failed Run ends the target's Receive, as
// the executor does when the source's opcode ends.
func tlsMove(t *testing.T, a, b *node, inst string) (srcPid int, err error) {
	t.Helper()
	a.disk(t, inst, qemu.FillOnce)
	b.disk(t, inst, qemu.FillOnce)
	start(t, a, inst)
	srcPid = a.state(t, inst).Pid
	guestWrote(t, a, inst)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	op := migrateOp(inst, a, b)
	rctx, rcancel := context.WithCancelCause(ctx)
	defer rcancel(nil)
	m := startMove(t, rctx, &op, a, b)
	_, err = a.d.Run(ctx, op, m.rec.report)
	if err != nil {
		// the executor ends the target's side when the source's opcode
		// fails, for a roll back
		rcancel(fmt.Errorf("%w: the source failed: %v", executor.ErrCanceled, err))
	}
	rerr := m.receiveResult(t)
	if (err == nil) != (rerr == nil) {
		t.Errorf("Run: %v; Receive: %v", err, rerr)
	}
	return srcPid, err
}

// Both ends with the cluster's identities: the stream is QEMU's TLS and
// the guest moves.
func TestMigrationOverTLS(t *testing.T) {
	dir := pki(t, "qa", "qb")
	a, b := newNode(t, "qa", withTLS(dir, "qa")), newNode(t, "qb", withTLS(dir, "qb"))
	if _, err := tlsMove(t, a, b, "vt1"); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := b.state(t, "vt1"); st.Status != events.StatusUp {
		t.Fatalf("target after the move: %+v", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := b.d.HMP(ctx, "vt1", "info migrate_parameters")
	if err != nil || !strings.Contains(out, "drove-tls-server") {
		t.Errorf("the target's migration parameters (%v):\n%s\nwant its TLS credentials", err, out)
	}
}

// A target whose certificate another CA signed, or whose certificate
// names another node than the one the source moves to, is refused: the
// move fails and the guest runs on where it was.
func TestMigrationOverTLSRefusesAWrongPeer(t *testing.T) {
	for _, c := range []struct {
		name string
		// ids returns the source's pki and the target's identity.
		ids func() (string, func(*qemu.Config))
	}{
		{"another CA", func() (string, func(*qemu.Config)) { return pki(t, "qa"), withTLS(pki(t, "qb"), "qb") }},
		{"another node name", func() (string, func(*qemu.Config)) {
			dir := pki(t, "qa", "qz")
			return dir, withTLS(dir, "qz")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, target := c.ids()
			a, b := newNode(t, "qa", withTLS(dir, "qa")), newNode(t, "qb", target)
			srcPid, err := tlsMove(t, a, b, "vt2")
			if err == nil || !errors.Is(err, executor.ErrFatal) {
				t.Fatalf("Run: %v, want a fatal failure", err)
			}
			t.Logf("refused: %v", err)
			if st := a.state(t, "vt2"); st.Status != events.StatusUp || st.Pid != srcPid {
				t.Errorf("source after the refusal: %+v, want the same VM up", st)
			}
			if st := b.state(t, "vt2"); st.Status != events.StatusDown || st.Running {
				t.Errorf("target after the refusal: %+v, want no VM", st)
			}
		})
	}
}

// The target refuses a source the move does not name or the cluster no
// longer trusts, on its own side of the handshake: each source below
// trusts the cluster's CA, so it accepts the target, and only the
// target can refuse. The move fails, the guest runs on at the source,
// and the target's QEMU says why.
func TestMigrationTargetRefusesTheSource(t *testing.T) {
	for _, c := range []struct {
		name string
		// source returns the source's identity given the cluster's pki
		// dir (which also holds qa's and qb's files).
		source func(t *testing.T, dir string) func(*qemu.Config)
		logs   string // in the target's QEMU log
	}{
		{"a certificate from another CA", func(t *testing.T, dir string) func(*qemu.Config) {
			other := nodeid.FilesIn(filepath.Join(pki(t, "qa"), "qa"), "qa")
			other.CA = nodeid.FilesIn(filepath.Join(dir, "qa"), "qa").CA
			return func(c *qemu.Config) { c.TLS = other }
		}, "hasn't got a known issuer"},
		{"another node's valid certificate", func(t *testing.T, dir string) func(*qemu.Config) {
			if _, err := nodeid.Bundle(dir, "qz"); err != nil {
				t.Fatal(err)
			}
			return withTLS(dir, "qz")
		}, "authz check for O=Drove node,CN=qz is denied"},
		{"an expired certificate", func(t *testing.T, dir string) func(*qemu.Config) {
			f := testenv.ExpiredIdentity(t, dir, "qa")
			return func(c *qemu.Config) { c.TLS = f }
		}, "not trusted"}, // gnutls flags it invalid, and QEMU reports that first
		{"a revoked certificate", func(t *testing.T, dir string) func(*qemu.Config) {
			testenv.Revoke(t, dir, "qa", "qb")
			return withTLS(dir, "qa")
		}, "revoked"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := pki(t, "qa", "qb")
			a, b := newNode(t, "qa", c.source(t, dir)), newNode(t, "qb", withTLS(dir, "qb"))
			srcPid, err := tlsMove(t, a, b, "vt3")
			if err == nil {
				t.Fatal("the move went through")
			}
			if st := a.state(t, "vt3"); st.Status != events.StatusUp || st.Pid != srcPid {
				t.Errorf("source after the refusal: %+v, want the same VM up", st)
			}
			if st := b.state(t, "vt3"); st.Status != events.StatusDown || st.Running {
				t.Errorf("target after the refusal: %+v, want no VM", st)
			}
			if log := b.log(t, "vt3"); !strings.Contains(log, c.logs) {
				t.Errorf("the target's QEMU log does not say %q:\n%s", c.logs, log)
			}
		})
	}
}

// A TLS client with no certificate at all, on the target's migration
// port, is refused at its first read; the target then still takes the
// source's stream.
func TestMigrationTargetRefusesAClientWithoutCertificate(t *testing.T) {
	dir := pki(t, "qa", "qb")
	a, b := newNode(t, "qa", withTLS(dir, "qa")), newNode(t, "qb", withTLS(dir, "qb"))
	a.disk(t, "vt4", qemu.FillOnce)
	b.disk(t, "vt4", qemu.FillOnce)
	start(t, a, "vt4")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	op := migrateOp("vt4", a, b)
	m := startMove(t, ctx, &op, a, b)
	var addr string
	select {
	case addr = <-m.listened:
	case <-ctx.Done():
		t.Fatal("the target never listened")
	}
	if err := dialWithoutCertificate(ctx, addr); err == nil {
		t.Fatal("the target took a TLS stream from a client without a certificate")
	} else {
		t.Logf("refused: %v", err)
	}
	m.run(t, ctx, op, a) // the move after the refused client
}
