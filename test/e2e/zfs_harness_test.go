package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/executor/process"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/test/zfsenv"
)

// The ZFS end-to-end tests run the whole system on real parts: every node
// of a one-group, three-node cluster is a zfs-fuse pool (test/zfsenv,
// whose watchdog restarts a deadlocked or dead daemon and fails the test saying
// so; make test then runs these tests again, test/tools/zfs-tests.sh),
// every instance a dataset with generated content and a process that
// keeps rewriting a file in it (allinone.ZFSDemo), every executor the ZFS
// driver with the process runtime. The sim driver is nowhere.
//
// What the test knows about the data it learns itself: its runtime wraps
// each node's, and hashes the instance's mounted dataset right after the
// process stopped on the source (what the final snapshot holds) and right
// before it starts on the target (what arrived), with its own tree hash.

// zfsNodes is the cluster of these tests: node-g1-1 … node-g1-3, each the
// primary of local-K and repl-K (replica on the next node).
func zfsCluster() *planner.Cluster { return allinone.ZFSCluster(1, 3) }

// zenv is env on ZFS.
type zenv struct {
	*env
	demo     *allinone.ZFSDemo
	switches *switchLog
}

// zfsWorkload rewrites 16 KiB every 20 ms: about 800 KB/s per instance,
// so every sync has a real delta.
var zfsWorkload = allinone.Workload{Block: 16 << 10, Blocks: 256, Interval: 20 * time.Millisecond}

// startZfs starts the system on fresh pools, one per node, tune applied
// to each node's ZFS driver configuration (nil: none).
func startZfs(t *testing.T, tune func(node string, cfg *zfs.Config)) *zenv {
	t.Helper()
	zfsenv.Require(t)
	cluster := zfsCluster()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	z := &zenv{switches: &switchLog{}}
	z.demo = &allinone.ZFSDemo{Pools: map[string]string{}, StateDir: t.TempDir(), ContentBytes: 4 << 20,
		Workload: zfsWorkload, Logger: testLogger(),
		Tune: func(node string, cfg *zfs.Config) {
			cfg.ReportInterval = 100 * time.Millisecond
			cfg.Runtime = recordingRuntime{Runtime: cfg.Runtime, node: node, log: z.switches}
			if tune != nil {
				tune(node, cfg)
			}
		}}
	for _, n := range cluster.Nodes {
		z.demo.Pools[n.Name] = zfsenv.Pool(t, n.Name, 256)
	}
	// Registered after the pools, so it runs before they are destroyed,
	// and before the system starts, so it runs after the system stopped.
	t.Cleanup(func() {
		if _, err := z.demo.StopWorkloads(context.Background()); err != nil {
			t.Errorf("stopping the workloads: %v", err)
		}
	})
	if err := z.demo.Provision(ctx, cluster); err != nil {
		t.Fatal(err)
	}
	z.env = startWith(t, func(cfg *allinone.Config) {
		cfg.Seed, cfg.Driver = zfsCluster, z.demo.Driver
	}, "")
	return z
}

// recordingRuntime is a node's runtime with the test's own hash of the
// dataset at each stop and start.
type recordingRuntime struct {
	zfs.Runtime
	node string
	log  *switchLog
}

func (r recordingRuntime) Stop(ctx context.Context, in zfs.Instance) error {
	run, err := r.Runtime.Running(ctx, in)
	if err != nil {
		return err
	}
	if err := r.Runtime.Stop(ctx, in); err != nil || !run {
		return err
	}
	r.log.add(in.Name, r.node, "stop", in.Mountpoint)
	return nil
}

func (r recordingRuntime) Start(ctx context.Context, in zfs.Instance) error {
	if run, err := r.Runtime.Running(ctx, in); err != nil || run {
		return err
	}
	r.log.add(in.Name, r.node, "start", in.Mountpoint)
	return r.Runtime.Start(ctx, in)
}

// WorkloadDowntime passes the question on: the wrapper must not hide
// the runtime's timeline from the driver.
func (r recordingRuntime) WorkloadDowntime(ctx context.Context, in zfs.Instance) (time.Duration, error) {
	wc, ok := r.Runtime.(zfs.WorkloadClocked)
	if !ok {
		return 0, fmt.Errorf("%w: the runtime of %s keeps none", process.ErrNoTimeline, r.node)
	}
	return wc.WorkloadDowntime(ctx, in)
}

// workloadGap is the gap the workload's timeline on node shows at its
// latest start there: read by the test itself from the data, after a
// move onto node, the move's downtime as the workload saw it.
func (z *zenv) workloadGap(node, instance string) time.Duration {
	z.t.Helper()
	ws, err := process.ReadTimeline(z.mountpoint(node, instance))
	if err != nil {
		z.t.Fatalf("the timeline of %s on %s: %v", instance, node, err)
	}
	gap, ok := process.RestartGap(ws, time.Time{})
	if !ok {
		z.t.Fatalf("no start after a write in the timeline of %s on %s (%d writes)", instance, node, len(ws))
	}
	return gap
}

// switchLog is every stop and start of an instance, with the dataset's
// hash at that moment.
type switchLog struct {
	mu  sync.Mutex
	evs []switchEvent
}

type switchEvent struct {
	instance, node, what, sum string
	at                        time.Time
	tree                      tree
}

func (l *switchLog) add(instance, node, what, dir string) {
	t, err := readTree(dir)
	sum := t.sum
	if err != nil {
		sum = "error: " + err.Error()
	}
	l.mu.Lock()
	l.evs = append(l.evs, switchEvent{instance, node, what, sum, time.Now(), t})
	l.mu.Unlock()
}

func (l *switchLog) of(instance string) []switchEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []switchEvent
	for _, e := range l.evs {
		if e.instance == instance {
			out = append(out, e)
		}
	}
	return out
}

// tree is the test's own hash of a directory (sum: every regular file's
// relative path and the sha256 of its content, in lexical order), with
// what a failure names: each file's hash, "pos" itself, and the hash of
// each of "ring"'s blocks.
type tree struct {
	sum   string
	files map[string]string
	pos   string
	ring  []string
}

// diff names what differs between two trees: files, and ring's blocks.
func (a tree) diff(b tree) string {
	var out []string
	for _, f := range slices.Sorted(maps.Keys(a.files)) {
		if a.files[f] != b.files[f] {
			out = append(out, f)
		}
	}
	for f := range b.files {
		if _, ok := a.files[f]; !ok {
			out = append(out, f+" (new)")
		}
	}
	var blocks []string
	for i := range min(len(a.ring), len(b.ring)) {
		if a.ring[i] != b.ring[i] {
			blocks = append(blocks, strconv.Itoa(i))
		}
	}
	return fmt.Sprintf("files %v differ; pos %q then %q; ring blocks %v differ (of %d then %d)",
		out, a.pos, b.pos, blocks, len(a.ring), len(b.ring))
}

// readTree reads dir's tree: what ZFS holds, not what the kernel cached
// before a receive changed the dataset under zfs-fuse.
func readTree(dir string) (tree, error) {
	t := tree{files: map[string]string{}}
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() && rel == ".zfs" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := readUncached(path)
		if err != nil {
			return err
		}
		fh := sha256.Sum256(b)
		fmt.Fprintf(h, "%s\x00%x\n", rel, fh)
		t.files[rel] = hex.EncodeToString(fh[:])
		switch rel {
		case "pos":
			t.pos = strings.TrimSpace(string(b))
		case "ring":
			for blk := range slices.Chunk(b, int(zfsWorkload.Block)) {
				bh := sha256.Sum256(blk)
				t.ring = append(t.ring, hex.EncodeToString(bh[:4]))
			}
		}
		return nil
	})
	t.sum = hex.EncodeToString(h.Sum(nil))
	return t, err
}

// readUncached reads a file after dropping its cached pages.
func readUncached(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// zfsOut runs a zfs command and returns its output, failing the test if
// it fails.
func (z *zenv) zfsOut(args ...string) string {
	z.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "zfs", args...).CombinedOutput()
	if err != nil {
		z.t.Fatalf("zfs %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// datasets lists what node's pool holds of instance: the dataset and its
// snapshots ("" and "@migrate-snap-N"); nil when nothing.
func (z *zenv) datasets(node, instance string) []string {
	z.t.Helper()
	ds := z.demo.Dataset(node, instance)
	var out []string
	for _, name := range strings.Fields(z.zfsOut("list", "-H", "-o", "name", "-t", "all", "-r", z.demo.Parent(node))) {
		if rest, ok := strings.CutPrefix(name, ds); ok && (rest == "" || strings.HasPrefix(rest, "@")) {
			out = append(out, rest)
		}
	}
	return out
}

// snapshots lists the migration snapshot numbers of instance on node.
func (z *zenv) snapshots(node, instance string) []string {
	var out []string
	for _, s := range z.datasets(node, instance) {
		if strings.HasPrefix(s, "@migrate-snap-") {
			out = append(out, strings.TrimPrefix(s, "@"))
		}
	}
	return out
}

// snapshotHash clones node's snapshot of instance, hashes the clone with
// readTree, and destroys it.
func (z *zenv) snapshotHash(node, instance, snap string) string {
	z.t.Helper()
	var sum string
	z.inSnapshot(node, instance, snap, func(mp string) {
		var err error
		var t tree
		if t, err = readTree(mp); err != nil {
			z.t.Fatalf("hashing %s@%s on %s: %v", instance, snap, node, err)
		}
		sum = t.sum
	})
	return sum
}

// inSnapshot clones node's snapshot of instance, calls read with the
// clone's mountpoint, and destroys the clone.
func (z *zenv) inSnapshot(node, instance, snap string, read func(mp string)) {
	z.t.Helper()
	clone := z.demo.Parent(node) + "/e2e-check-" + instance
	z.zfsOut("clone", z.demo.Dataset(node, instance)+"@"+snap, clone)
	defer z.destroyBusy(clone)
	read(strings.TrimSpace(z.zfsOut("get", "-H", "-o", "value", "mountpoint", clone)))
}

// destroyBusy destroys a dataset that zfs-fuse may call busy for a
// moment after it was read.
func (z *zenv) destroyBusy(ds string) {
	z.t.Helper()
	var out []byte
	var err error
	z.waitFor("destroying "+ds, 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err = exec.CommandContext(ctx, "zfs", "destroy", ds).CombinedOutput()
		if err != nil && !strings.Contains(string(out), "busy") {
			z.t.Fatalf("zfs destroy %s: %v: %s", ds, err, out)
		}
		return err == nil
	})
}

// mountpoint is where instance's dataset on node is mounted.
func (z *zenv) mountpoint(node, instance string) string {
	z.t.Helper()
	return strings.TrimSpace(z.zfsOut("get", "-H", "-o", "value", "mountpoint", z.demo.Dataset(node, instance)))
}

// running says whether instance's workload runs on node.
func (z *zenv) running(node, instance string) bool {
	z.t.Helper()
	rt, err := z.demo.Runtime(node)
	if err != nil {
		z.t.Fatal(err)
	}
	run, err := rt.Running(context.Background(), zfs.Instance{Name: instance, Node: node})
	if err != nil {
		z.t.Fatal(err)
	}
	return run
}

// whyNotRunning gathers what tells why instance's workload does not run
// on node: the workload's own log (the process runtime's, in its state
// directory; the runtime also logs the exit itself, as a warning),
// whether its dataset is mounted, its place in the ring, and its stops
// and starts with the test's hashes.
func (z *zenv) whyNotRunning(node, instance string) string {
	z.t.Helper()
	var b strings.Builder
	logf := filepath.Join(z.demo.StateDir, node, "_"+instance+".log")
	out, err := os.ReadFile(logf)
	fmt.Fprintf(&b, "its log %s: %q (%v); ", logf, out, err)
	ds := z.demo.Dataset(node, instance)
	fmt.Fprintf(&b, "mounted: %s; ", strings.TrimSpace(z.zfsOut("get", "-H", "-o", "value", "mounted", ds)))
	pos, err := os.ReadFile(filepath.Join(z.mountpoint(node, instance), "pos"))
	fmt.Fprintf(&b, "pos: %q (%v); ", pos, err)
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(mounts), "\n") {
		if strings.Contains(l, ds) { // as the source and in the mountpoint
			fmt.Fprintf(&b, "mountinfo: %s; ", l)
		}
	}
	for _, e := range z.switches.of(instance) {
		fmt.Fprintf(&b, "%s %s %s at %s; ", e.what, e.node, e.sum[:min(12, len(e.sum))], e.at.Format("15:04:05.000"))
	}
	return b.String()
}

// baseIntact checks that the generated file "base" of instance on node is
// byte for byte what was generated at the start.
func (z *zenv) baseIntact(node, instance string) {
	z.t.Helper()
	dir := z.t.TempDir()
	if err := allinone.GenerateContent(dir, instance, z.demo.ContentBytes); err != nil {
		z.t.Fatal(err)
	}
	want := fileHash(z.t, filepath.Join(dir, "base"))
	if got := fileHash(z.t, filepath.Join(z.mountpoint(node, instance), "base")); got != want {
		z.t.Errorf("%s on %s: base is %s, generated %s", instance, node, got, want)
	}
}

func fileHash(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// switchedIntact checks that instance's last stop on from and the start
// on to after it saw the same content, by the test's own hash.
func (z *zenv) switchedIntact(instance, from, to string) {
	z.t.Helper()
	evs := z.switches.of(instance)
	var stop, start *switchEvent
	for i := range evs {
		e := &evs[i]
		if e.node == from && e.what == "stop" {
			stop, start = e, nil
		}
		if stop != nil && e.node == to && e.what == "start" {
			start = e
		}
	}
	switch {
	case stop == nil || start == nil:
		z.t.Errorf("%s: no stop on %s followed by a start on %s: %+v", instance, from, to, evs)
	case strings.HasPrefix(stop.sum, "error") || stop.sum != start.sum:
		z.t.Errorf("%s: content at the stop on %s %s, at the start on %s %s: %s", instance, from, stop.sum, to, start.sum, stop.tree.diff(start.tree))
	}
}

// testLogger is the workloads' and drivers' logger: warnings, or
// everything with DROVE_E2E_DEBUG set.
func testLogger() *slog.Logger {
	level := slog.LevelWarn
	if os.Getenv("DROVE_E2E_DEBUG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}
