package zfs_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"golang.org/x/sys/unix"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/test/testenv"
)

const testTimeout = 120 * time.Second

// world is one test's Kafka, inventory and nodes, each node a pool.
type world struct {
	t    *testing.T
	ctx  context.Context
	kcfg kafka.Config
	prod *kafka.Producer
	// pki and exec: the nodes' identities for transfer streams, and
	// changes a test makes to a node's executor config (tls_test.go).
	pki  *pki
	exec map[string]func(*executor.Config)
}

func newWorld(t *testing.T, nodes []string, instances ...events.InstanceDeclared) *world {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	k, kcfg := testenv.Events(t, ctx)
	prod := k.Producer(t, kcfg, "test-seed")
	w := &world{t: t, ctx: ctx, kcfg: kcfg, prod: prod}
	var inv []events.Envelope
	for _, n := range nodes {
		inv = append(inv, w.event(events.NodeAnnounced{Name: n, Group: "g1", VMCapable: true,
			Total: events.Resources{MemoryMiB: 65536, DiskMiB: 1 << 20, CPUs: 32}}))
	}
	for _, in := range instances {
		inv = append(inv, w.event(in))
	}
	w.append(events.TopicInventory, inv...)
	return w
}

func (w *world) event(p events.Payload) events.Envelope {
	return events.New(p, events.WithProducer("test"),
		events.WithReason(events.Reason{Actor: "operator:test", Why: "zfs driver test", RequestID: "req-1"}))
}

func (w *world) append(topic string, envs ...events.Envelope) {
	w.t.Helper()
	if err := w.prod.Append(w.ctx, topic, envs...); err != nil {
		w.t.Fatalf("append to %s: %v", topic, err)
	}
}

func (w *world) dispatch(job int, node string, op events.Opcode) {
	w.t.Helper()
	facts := testenv.Facts(w.t, w.ctx, w.kcfg, op.Instance, op.From, op.To) // as the planner would
	w.append(events.TopicOpcodes, w.event(events.OpcodeDispatched{Request: "req-1", Job: job, Index: 0, Node: node, Opcode: op,
		Facts: facts}))
}

// node is one node: a pool, a driver over it, and an executor running it.
type node struct {
	name   string
	pool   string
	rt     *zfs.MemRuntime
	driver *zfs.Driver
	stop   context.CancelFunc
	done   chan error
}

func (w *world) node(name, pool string, rt *zfs.MemRuntime, tweak func(*zfs.Config)) *node {
	w.t.Helper()
	cfg := zfs.Config{Node: name, Parent: pool, Runtime: rt, ReportInterval: 50 * time.Millisecond,
		Logger: testLogger()}
	if tweak != nil {
		tweak(&cfg)
	}
	d, err := zfs.New(w.ctx, cfg)
	if err != nil {
		w.t.Fatalf("zfs.New: %v", err)
	}
	n := &node{name: name, pool: pool, rt: rt, driver: d}
	n.start(w)
	return n
}

func (n *node) start(w *world) {
	w.t.Helper()
	ex, err := executor.New(w.execConfig(executor.Config{
		Node: n.name, Kafka: w.kcfg, ProgressInterval: 50 * time.Millisecond,
		Retry:  executor.Retry{Attempts: 8, Initial: 50 * time.Millisecond, Max: 500 * time.Millisecond},
		Logger: testLogger(),
	}), n.driver)
	if err != nil {
		w.t.Fatalf("executor.New: %v", err)
	}
	ctx, cancel := context.WithCancel(w.ctx)
	n.stop, n.done = cancel, make(chan error, 1)
	go func() { n.done <- ex.Run(ctx) }()
	w.t.Cleanup(func() { n.shutdown(w.t) })
}

func (n *node) shutdown(t *testing.T) {
	t.Helper()
	if n.stop == nil {
		return
	}
	n.stop()
	n.stop = nil
	select {
	case err := <-n.done:
		if err != nil {
			t.Errorf("executor %s: %v", n.name, err)
		}
	case <-time.After(testTimeout):
		t.Errorf("executor %s did not stop", n.name)
	}
}

// ended waits for the OpcodeEnded of job from node and returns it.
func (w *world) ended(job int, node string) events.OpcodeEnded {
	w.t.Helper()
	ofJob := func(e events.OpcodeEnded) bool { return e.Job == job && e.Node == node }
	for {
		if ended := testenv.Read(w.t, w.ctx, w.kcfg, ofJob); len(ended) > 0 {
			return ended[0]
		}
		select {
		case <-w.ctx.Done():
			w.t.Fatalf("job %d did not end on %s in time", job, node)
		case <-time.After(100 * time.Millisecond): // polling the log with a deadline
		}
	}
}

// progress returns the Progress events of node so far.
func (w *world) progress(node string) []events.Progress {
	w.t.Helper()
	return testenv.Read(w.t, w.ctx, w.kcfg, func(p events.Progress) bool { return p.Node == node })
}

// writer is the instance's workload: it appends pseudo-random data to a
// file in the mounted dataset until stopped, hashing what it wrote.
type writer struct {
	mu      sync.Mutex
	stopped chan struct{}
	done    chan struct{}
	written int64
	err     error
}

// fill writes size bytes of seeded data to dir/base.
func fill(t *testing.T, dir string, size int64) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "base"))
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	if _, err := io.CopyN(bw, rand.NewChaCha8([32]byte{1}), size); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// startWriter appends rate bytes per second to dir/log in 64 KiB writes.
func startWriter(dir string, rate int64) *writer { return startWriterTo(dir, "log", rate) }

// startWriterTo is startWriter to dir/file.
func startWriterTo(dir, file string, rate int64) *writer {
	w := &writer{stopped: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		f, err := os.OpenFile(filepath.Join(dir, file), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			w.err = err
			return
		}
		defer f.Close()
		src := rand.NewChaCha8([32]byte{2})
		buf := make([]byte, 64<<10)
		every := time.Duration(float64(time.Second) * float64(len(buf)) / float64(rate))
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-w.stopped:
				w.err = f.Sync()
				return
			case <-t.C:
			}
			_, _ = src.Read(buf)
			if _, err := f.Write(buf); err != nil {
				w.err = err
				return
			}
			w.mu.Lock()
			w.written += int64(len(buf))
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *writer) stop() {
	select {
	case <-w.stopped:
	default:
		close(w.stopped)
	}
	<-w.done
}

func (w *writer) bytes() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written
}

// expected is the sha256 of base (size bytes) and log (logBytes) as the
// seeded sources produce them: what the target must hold.
func expected(size, logBytes int64) (string, string) {
	h := sha256.New()
	_, _ = io.CopyN(h, rand.NewChaCha8([32]byte{1}), size)
	l := sha256.New()
	_, _ = io.CopyN(l, rand.NewChaCha8([32]byte{2}), logBytes)
	return hex.EncodeToString(h.Sum(nil)), hex.EncodeToString(l.Sum(nil))
}

func fileSum(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// As a runtime does before it starts an instance over received data
	// (process.ZFSRuntime.Start): zfs-fuse does not drop the kernel's
	// cached pages of a file a receive changed, so a read soon after a
	// switch could be served from the pages of an earlier read.
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func testLogger() *slog.Logger {
	if os.Getenv("ZFS_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}
