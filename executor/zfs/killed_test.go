package zfs_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor/nodeid"
	"github.com/drovehq/drove/executor/process"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/test/proc"
	"github.com/drovehq/drove/test/testenv"
	"github.com/drovehq/drove/test/zfsenv"
)

// TestSourceExecutorKilledDuringASync: the source node's executor, a
// `drove executor` process (the zfs driver, the process runtime), gets
// SIGKILL in the middle of a sync's send, as a crash or the OOM killer
// would. The instance's process outlives it; the executor started again
// knows nothing of the move but what the datasets and the log say, and
// runs the sync again to its end. The source runs on, intact, nothing
// runs on the target, and an abort then clears the target.
func TestSourceExecutorKilledDuringASync(t *testing.T) {
	const size = 24 << 20
	poolA, poolB := zfsenv.Pool(t, "a", 128), zfsenv.Pool(t, "b", 128)
	w := newWorld(t, []string{"na", "nb"}, instance("vm11", events.StorageZFSLocal, "na", ""))
	zfsenv.Run(t, "zfs", "create", poolA+"/vm11")
	fill(t, "/"+poolA+"/vm11", size)
	want := fileSum(t, "/"+poolA+"/vm11/base")

	na := w.executorProcess("na", poolA)
	procA, err := process.New(process.Config{Node: "na", Dir: na.processDir, Command: na.command, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(procA.Destroy)
	vm := zfs.Instance{Name: "vm11", Node: "na", Dataset: poolA + "/vm11", Mountpoint: "/" + poolA + "/vm11"}
	if err := (process.ZFSRuntime{Driver: procA}).Start(w.ctx, vm); err != nil {
		t.Fatal(err)
	}
	rtB := zfs.NewMemRuntime()
	na.Start(t)
	w.node("nb", poolB, rtB, nil)

	m := w.migration("m11", "vm11", "na", "nb")
	m.must(events.PhaseBegin)
	m.mbps = 32 // 4 MB/s: the send lasts some 6 s
	seq := m.dispatch(events.PhaseSync)
	m.sending(seq, 2<<20)
	na.Stop(syscall.SIGKILL, time.Minute)
	if st, err := procA.Status(w.ctx, "vm11"); err != nil || !st.Running {
		t.Fatalf("the instance did not outlive its executor's SIGKILL (%+v, %v)", st, err)
	}
	m.mbps = 0
	na.Start(t)
	e := m.ended(seq)
	t.Logf("sync ended %s: %s", e.Status, e.Error)
	if e.Status != events.JobSuccess {
		t.Fatalf("the sync run again by the new executor ended %s: %s\n%s", e.Status, e.Error, na.Tail())
	}
	running := func() {
		t.Helper()
		if st, _ := procA.Status(w.ctx, "vm11"); !st.Running {
			t.Error("vm11 does not run on the source")
		}
		if rtB.IsRunning("vm11") {
			t.Error("vm11 runs on the target too")
		}
		if got := fileSum(t, "/"+poolA+"/vm11/base"); got != want {
			t.Errorf("the source's content changed: %s, want %s", got, want)
		}
	}
	running()
	notCommitted(t, poolB+"/vm11", "m11")
	m.must("abort")
	if left := datasets(t, poolB, "vm11"); len(left) > 0 {
		t.Fatalf("left on the target after the abort: %v", left)
	}
	running()
}

// execProc is a node's executor run as a `drove executor` process.
type execProc struct {
	*proc.Proc
	processDir string                                  // the process runtime's pid files
	command    func(instance string) ([]string, error) // the instances' command, as the process runs it
}

// executorProcess is node's executor as a process over pool, with the
// node's identity and the world's log; its instances run a script
// (--command takes no shell quoting).
func (w *world) executorProcess(node, pool string) *execProc {
	w.t.Helper()
	dir := w.t.TempDir()
	script := filepath.Join(dir, "workload.sh")
	// It numbers the lines it appends to log, as [workload] does, without
	// its noise: this process runs for the whole test, not one move.
	const lines = `i=0; while :; do i=$((i+1)); echo "$DROVE_NODE $i" >> log; sleep 0.05; done`
	if err := os.WriteFile(script, []byte(lines+"\n"), 0o755); err != nil {
		w.t.Fatal(err)
	}
	w.identity(node) // its files, in the world's PKI directory
	id := nodeid.FilesIn(filepath.Join(w.pki.dir, node), node)
	env := append([]string{"env", "DROVE_NODE=" + node}, testenv.KafkaEnv(w.kcfg)...)
	p := &proc.Proc{Name: "executor-" + node, Dir: dir, Argv: append(env, testenv.Drove(w.t), "executor",
		"--node", node, "--driver", "zfs", "--zfs-parent", pool, "--runtime", "process",
		"--command", "sh "+script+" {instance}", "--state-dir", dir, "--listen-addr", "127.0.0.1:0",
		"--tls-cert", id.Cert, "--tls-key", id.Key, "--tls-ca", id.CA, "--transfer-secret", id.Secret)}
	w.t.Cleanup(func() {
		p.Stop(syscall.SIGKILL, time.Minute)
		if w.t.Failed() {
			w.t.Logf("%s's log:\n%s", p.Name, p.Log())
		}
	})
	return &execProc{Proc: p, processDir: filepath.Join(dir, "process"),
		command: func(string) ([]string, error) { return []string{"sh", script}, nil }}
}
