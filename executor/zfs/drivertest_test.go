package zfs_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/drivertest"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/test/zfsenv"
)

// zfsStorage is what the ZFS driver moves; it refuses shared storage.
var zfsStorage = []events.StorageKind{events.StorageZFSReplicated, events.StorageZFSLocal}

// TestDriverContract runs the drivertest suite against the ZFS driver:
// three zfs-fuse pools, one per node of the suite, each with its own
// zfs.Driver, joined into one executor.Driver by contractWorld.
func TestDriverContract(t *testing.T) {
	nodes := []string{drivertest.Node1, drivertest.Node2, drivertest.Node3}
	pools := map[string]string{}
	for i, n := range nodes {
		pools[n] = zfsenv.Pool(t, fmt.Sprintf("dt%d", i+1), 128)
	}
	var seq atomic.Int64
	drivertest.RunFor(t, zfsStorage, func(t *testing.T) executor.Driver {
		// One parent dataset per subtest on each pool: far cheaper than
		// pools, and each subtest starts from the fixture alone.
		return newContractWorld(t, nodes, pools, fmt.Sprintf("w%d", seq.Add(1)))
	})
}

// contractWorld is an executor.Driver over one zfs.Driver per node, doing
// what the executors of the source and target nodes would do around them:
// Run starts the target's Receive, hands its address to the source's Run
// through Op.AwaitReceiver, stops the receiver when the source's Run ends
// (as the target's executor does on the source's OpcodeEnded), and drops
// the old replica after a replace-disks (as the old secondary's executor
// does once the inventory moves the replica, executor.ReplicaDropper).
//
// Every node is online, so a failover runs on its source like a migrate
// that does not re-sync; the zfs driver's failover from an offline primary
// (Run on the target) is tested in replica_test.go.
//
// It is also a drivertest.Locator; see Locate for the rule.
type contractWorld struct {
	order []string
	nodes map[string]*contractNode

	mu sync.Mutex
	// primaryMaking is the world's opcode log: for each opcode key run,
	// whether its commit makes the target the primary (migrate, failover)
	// or not (replace-disks).
	primaryMaking map[string]bool
}

type contractNode struct {
	name   string
	parent string
	rt     *zfs.MemRuntime
	d      *zfs.Driver
}

// fixtureKey marks the fixture's primaries as placed by an earlier move.
const fixtureKey = "drivertest-fixture/0/0"

// fixtureBytes is the data written into each fixture dataset.
const fixtureBytes = 3 << 20

func newContractWorld(t *testing.T, order []string, pools map[string]string, name string) *contractWorld {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	w := &contractWorld{order: order, nodes: map[string]*contractNode{},
		primaryMaking: map[string]bool{fixtureKey: true}}
	ins := drivertest.FixtureFor(zfsStorage)
	for _, n := range order {
		parent := pools[n] + "/" + name
		zfsenv.Run(t, "zfs", "create", parent)
		t.Cleanup(func() { destroyTree(t, parent) })
		var running []string
		for _, in := range ins {
			if in.Primary == n && in.RunState == events.RunRunning {
				running = append(running, in.Name)
			}
		}
		rt := zfs.NewMemRuntime(running...)
		d, err := zfs.New(ctx, zfs.Config{Node: n, Parent: parent, Runtime: rt,
			ReportInterval: 20 * time.Millisecond, ReceiverWait: 20 * time.Second, Logger: testLogger()})
		if err != nil {
			t.Fatalf("zfs.New(%s): %v", n, err)
		}
		w.nodes[n] = &contractNode{name: n, parent: parent, rt: rt, d: d}
	}
	for _, in := range ins {
		ds := w.nodes[in.Primary].d.Dataset(in.Name)
		zfsenv.Run(t, "zfs", "create", ds)
		fill(t, "/"+ds, fixtureBytes)
		if in.Secondary != "" {
			// The replica as an earlier replication left it: both sides
			// hold @migrate-snap-1, the base of the next incremental.
			zfsenv.Run(t, "zfs", "snapshot", ds+"@migrate-snap-1")
			zfsenv.Run(t, "sh", "-c", "zfs send -R "+ds+"@migrate-snap-1 | zfs receive -F "+
				w.nodes[in.Secondary].d.Dataset(in.Name))
		}
		// Set after the replication, so that only the primary carries it.
		zfsenv.Run(t, "zfs", "set", "drove:committed="+fixtureKey, ds)
	}
	return w
}

// errSourceSucceeded stops a receiver whose source's Run succeeded: keep
// what was received (a second Run of a committed opcode never commits).
var errSourceSucceeded = errors.New("the source's Run succeeded")

// Run runs op's source side on op.From's driver and its target side on
// op.To's, and returns the source's result. The target's error is added
// to the source's where the source did not expect it; a target that fails
// after the source succeeded fails the Run.
func (w *contractWorld) Run(ctx context.Context, op executor.Op, report func(executor.Progress)) (executor.Result, error) {
	src, dst := w.nodes[op.From], w.nodes[op.To]
	if src == nil || dst == nil || src == dst {
		return executor.Result{}, executor.Fatal(fmt.Errorf("zfs world: no move from %q to %q", op.From, op.To))
	}
	w.mu.Lock()
	w.primaryMaking[op.Key()] = op.Kind != events.OpInstanceReplaceDisks
	w.mu.Unlock()

	// The target node's executor: its receiver runs apart from the
	// source's context, and the cancel reaches it through the source's
	// abort stream or, at the latest, when the source's Run ends.
	rctx, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stop(nil)
	var addr string
	announced, ended := make(chan struct{}), make(chan struct{})
	type outcome struct {
		err   error
		alone bool // ended by itself (commit, abort, failure), not stopped
	}
	recvDone := make(chan outcome, 1)
	rop := op
	rop.ListenAddr, rop.AwaitReceiver = "127.0.0.1:0", nil
	go func() {
		defer close(ended)
		err := dst.d.Receive(rctx, rop, func(a string) { addr = a; close(announced) }, func(executor.Progress) {})
		recvDone <- outcome{err, rctx.Err() == nil}
	}()
	// As the executor's: the address once announced, even to a done ctx.
	op.AwaitReceiver = func(ctx context.Context) (string, error) {
		select {
		case <-announced:
			return addr, nil
		default:
		}
		select {
		case <-announced:
			return addr, nil
		case <-ended:
			return "", fmt.Errorf("zfs world: the receiver on %s ended before it listened", op.To)
		case <-ctx.Done():
			return "", fmt.Errorf("zfs world: no receiver announced for %s: %w", op.Key(), ctx.Err())
		}
	}

	res, err := src.d.Run(ctx, op, report)

	// The source's opcode ended: a success or a transient fault (which
	// the executor retries) keeps what the target received; a fatal fault
	// or a cancel rolls it back.
	cause := errSourceSucceeded
	if err != nil && !executor.IsTransient(err) {
		cause = fmt.Errorf("%w: the source's Run failed: %v", executor.ErrCanceled, err)
	} else if err != nil {
		cause = fmt.Errorf("the source's Run failed transiently: %v", err)
	}
	stop(cause)
	rec := <-recvDone
	switch {
	case !rec.alone || rec.err == nil:
		// Committed, or stopped here: its error is the stop's echo.
	case err != nil && errors.Is(rec.err, executor.ErrCanceled):
		// The source aborted the move, as its error says.
	case err != nil:
		err = fmt.Errorf("%w; and the target %s: %v", err, op.To, rec.err)
	default:
		return res, fmt.Errorf("zfs world: %s succeeded on %s but the target %s failed: %w", op.Key(), op.From, op.To, rec.err)
	}
	if err != nil {
		return res, err
	}
	if old := w.nodes[op.Secondary]; op.Kind == events.OpInstanceReplaceDisks && old != nil && old != dst && old != src {
		if derr := old.d.DropReplica(ctx, op.Instance); derr != nil {
			return res, fmt.Errorf("zfs world: dropping the old replica on %s: %w", old.name, derr)
		}
	}
	return res, nil
}

// Locate says where instance is, from the nodes' runtimes and datasets:
//
//   - The primary of a running instance is the node whose runtime runs
//     it; it must hold the dataset, and no other node may run it.
//   - A stopped instance has no runtime to ask. Its primary is the node
//     whose dataset the last committed move made primary: the zfs driver
//     marks the dataset it commits into with drove:committed=<opcode
//     key>, and the world's opcode log says whether that opcode made the
//     target the primary (migrate, failover) or a replica
//     (replace-disks). The fixture marks its primaries as placed by an
//     earlier move. A sole holder is the primary whatever its marks.
//   - The secondary is every other node holding the dataset, joined by
//     commas: the replica of a zfs-replicated instance, and for zfs-local
//     storage a leftover the suite then reports.
func (w *contractWorld) Locate(ctx context.Context, instance string) (primary, secondary string, err error) {
	var holders, running, marked []string
	for _, name := range w.order {
		n := w.nodes[name]
		ds := n.d.Dataset(instance)
		out, err := zfsOut(ctx, "get", "-H", "-o", "value", "drove:committed", ds)
		if errors.Is(err, errNoDataset) {
			if n.rt.IsRunning(instance) {
				return "", "", fmt.Errorf("%s runs on %s, which has no dataset %s", instance, name, ds)
			}
			continue
		}
		if err != nil {
			return "", "", err
		}
		holders = append(holders, name)
		if n.rt.IsRunning(instance) {
			running = append(running, name)
		}
		w.mu.Lock()
		makes := w.primaryMaking[strings.TrimSpace(out)]
		w.mu.Unlock()
		if makes {
			marked = append(marked, name)
		}
	}
	switch {
	case len(running) > 1:
		return "", "", fmt.Errorf("%s runs on several nodes: %v", instance, running)
	case len(running) == 1:
		primary = running[0]
	case len(holders) == 1:
		primary = holders[0]
	case len(marked) == 1:
		primary = marked[0]
	default:
		return "", "", fmt.Errorf("stopped %s is held by %v; committed as primary on %v: no single primary", instance, holders, marked)
	}
	others := slices.DeleteFunc(holders, func(n string) bool { return n == primary })
	return primary, strings.Join(others, ","), nil
}

var (
	_ executor.Driver    = (*contractWorld)(nil)
	_ drivertest.Locator = (*contractWorld)(nil)
)

var errNoDataset = errors.New("no such dataset")

// zfsOut runs zfs and returns its output; a missing dataset is errNoDataset.
func zfsOut(ctx context.Context, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "zfs", args...).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "does not exist") {
			return "", errNoDataset
		}
		return "", fmt.Errorf("zfs %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// destroyTree destroys a subtest's parent dataset; zfs-fuse may call a
// just-used dataset busy for a moment. The pool goes at the end anyway.
func destroyTree(t *testing.T, ds string) {
	var err error
	for range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err = zfsOut(ctx, "destroy", "-r", "-f", ds)
		cancel()
		if err == nil || errors.Is(err, errNoDataset) {
			return
		}
		time.Sleep(200 * time.Millisecond) // zfs-fuse's busy has no signal to wait on
	}
	t.Logf("destroying %s: %v", ds, err)
}
