package zfs_test

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/nodeid"
	"github.com/drovehq/drove/executor/transfer"
	"github.com/drovehq/drove/executor/transfer/wiretap"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/test/zfsenv"
)

// pki is a test's CA and its nodes' identities: every executor of the
// harness moves over TLS with a certificate naming its node, as in a
// real cluster.
type pki struct {
	dir string
	mu  sync.Mutex
	ids map[string]*nodeid.Identity
}

func (w *world) identity(node string) *nodeid.Identity {
	w.t.Helper()
	if w.pki == nil {
		w.pki = &pki{dir: w.t.TempDir(), ids: map[string]*nodeid.Identity{}}
	}
	w.pki.mu.Lock()
	defer w.pki.mu.Unlock()
	if id := w.pki.ids[node]; id != nil {
		return id
	}
	ids, err := nodeid.Bundle(w.pki.dir, node)
	if err != nil {
		w.t.Fatalf("identity of %s: %v", node, err)
	}
	w.pki.ids[node] = ids[node]
	return ids[node]
}

// execConfig gives cfg its node's identity, then the test's changes.
func (w *world) execConfig(cfg executor.Config) executor.Config {
	cfg.Transfer = w.identity(cfg.Node)
	if f := w.exec[cfg.Node]; f != nil {
		f(&cfg)
	}
	return cfg
}

func (w *world) tweakExecutor(node string, f func(*executor.Config)) {
	if w.exec == nil {
		w.exec = map[string]func(*executor.Config){}
	}
	w.exec[node] = f
}

// impostor hides an identity's node name, so an executor accepts it for
// another node: what a node holding another's certificate would run.
type impostor struct{ transfer.Identity }

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

const marker = "DROVE-DATASET-MARKER-5b1e07"

// writeMarked writes about size bytes of lines holding marker.
func writeMarked(t *testing.T, path string, size int) {
	t.Helper()
	line := "instance data line with " + marker + "\n"
	if err := os.WriteFile(path, bytes.Repeat([]byte(line), size/len(line)+1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMoveIsEncryptedOnTheWire moves a dataset holding a marker string
// between two executors with node certificates, through a tap on the
// wire: the move succeeds, the target holds the marker, the wire never
// showed it.
func TestMoveIsEncryptedOnTheWire(t *testing.T) {
	poolA, poolB := zfsenv.Pool(t, "a", 256), zfsenv.Pool(t, "b", 256)
	w := newWorld(t, []string{"na", "nb"}, instance("vm1", events.StorageZFSLocal, "na", ""))
	zfsenv.Run(t, "zfs", "create", poolA+"/vm1")
	writeMarked(t, "/"+poolA+"/vm1/data", 4<<20)

	listen := freePort(t)
	wire := wiretap.New(t, listen, nil)
	w.tweakExecutor("nb", func(c *executor.Config) {
		c.ListenAddr, c.AdvertiseAddr = listen, wire.Addr()
	})
	w.node("na", poolA, zfs.NewMemRuntime("vm1"), nil)
	w.node("nb", poolB, zfs.NewMemRuntime(), nil)
	w.dispatch(0, "na", events.Opcode{OpID: events.OpInstanceMigrate, Instance: "vm1", From: "na", To: "nb"})
	if e := w.ended(0, "na"); e.Status != events.JobSuccess {
		t.Fatalf("migrate ended %s: %s", e.Status, e.Error)
	}
	got, err := os.ReadFile(filepath.Join("/"+poolB, "vm1", "data"))
	if err != nil || !bytes.Contains(got, []byte(marker)) {
		t.Fatalf("the target's copy: %d bytes, %v; want the marked data", len(got), err)
	}
	sent := wire.Captured()
	if len(sent) < 4<<20 {
		t.Fatalf("the tap saw %d bytes: the move did not go through it", len(sent))
	}
	if bytes.Contains(sent, []byte(marker)) {
		t.Fatal("the dataset's marker crossed the wire in clear")
	}
}

// TestMoveToAnImpostorFailsCleanly: a target executor that presents
// another node's certificate, a certificate from another CA, or no TLS at
// all is refused; each move fails, and the source keeps its instance,
// running, with its data, and the target nothing.
func TestMoveToAnImpostorFailsCleanly(t *testing.T) {
	other, err := nodeid.Bundle(t.TempDir(), "nb")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		target string
		as     func(w *world, c *executor.Config)
	}{
		{"nb", func(w *world, c *executor.Config) { c.Transfer = impostor{w.identity("nx")} }},
		{"nc", func(_ *world, c *executor.Config) { c.Transfer = impostor{other["nb"]} }},
		{"nd", func(_ *world, c *executor.Config) { c.Transfer, c.PlainTransfer = nil, true }},
	}
	poolA := zfsenv.Pool(t, "a", 256)
	nodes := []string{"na"}
	var ins []events.InstanceDeclared
	for i, tc := range cases {
		nodes = append(nodes, tc.target)
		ins = append(ins, instance("vm"+string(rune('1'+i)), events.StorageZFSLocal, "na", ""))
	}
	w := newWorld(t, nodes, ins...)
	rtA := zfs.NewMemRuntime("vm1", "vm2", "vm3")
	for _, in := range ins {
		zfsenv.Run(t, "zfs", "create", poolA+"/"+in.Name)
		writeMarked(t, "/"+poolA+"/"+in.Name+"/data", 1<<20)
	}
	w.node("na", poolA, rtA, nil)
	pools := map[string]string{}
	for _, tc := range cases {
		w.tweakExecutor(tc.target, func(c *executor.Config) { tc.as(w, c) })
		pools[tc.target] = zfsenv.Pool(t, tc.target, 256)
		w.node(tc.target, pools[tc.target], zfs.NewMemRuntime(), nil)
	}
	for i, tc := range cases {
		in := ins[i].Name
		w.dispatch(i, "na", events.Opcode{OpID: events.OpInstanceMigrate, Instance: in, From: "na", To: tc.target})
		e := w.ended(i, "na")
		if e.Status != events.JobError || !strings.Contains(e.Error, "not the node the move names") {
			t.Errorf("move to %s ended %s (%s), want error: not the node the move names", tc.target, e.Status, e.Error)
		}
		if !rtA.IsRunning(in) {
			t.Errorf("%s no longer runs on the source", in)
		}
		b, err := os.ReadFile("/" + poolA + "/" + in + "/data")
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			t.Errorf("%s's data on the source: %d bytes, %v", in, len(b), err)
		}
		if out := zfsenv.Run(t, "zfs", "list", "-H", "-t", "all", "-o", "name", "-r", pools[tc.target]); strings.Contains(out, in) {
			t.Errorf("the impostor %s received something:\n%s", tc.target, out)
		}
	}
}
