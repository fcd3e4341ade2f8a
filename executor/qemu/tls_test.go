package qemu_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/nodeid"
	"github.com/drovehq/drove/executor/qemu"
)

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
