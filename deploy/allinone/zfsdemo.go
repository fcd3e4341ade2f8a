package allinone

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/process"
	"github.com/drovehq/drove/executor/zfs"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
)

// The ZFS demo is the demo on real parts: each node's instances are
// datasets under <pool>/drove in the node's own pool, each running
// instance is a process (executor/process) that keeps writing into its
// dataset, and each node's executor moves datasets with the ZFS driver
// (executor/zfs), the processes stopped and started by it. `drove dev
// --driver zfs` runs it on file-backed pools; the end-to-end tests on the
// test helpers' pools.

// ZFSDemoCluster is the ZFS demo's cluster: 2 groups of 3 nodes, each
// node the primary of one zfs-local and one zfs-replicated instance (its
// replica on the next node of the group), all running.
func ZFSDemoCluster() *planner.Cluster { return ZFSCluster(2, 3) }

// ZFSCluster is a cluster of groups × nodesPerGroup nodes named
// node-gG-N, each the primary of instance local-K (zfs-local) and
// repl-K (zfs-replicated, replica on the next node of its group), all
// running, with room for every move.
func ZFSCluster(groups, nodesPerGroup int) *planner.Cluster {
	pol := planner.DefaultIPolicy()
	c := &planner.Cluster{Name: "zfs-demo", Tags: []string{}, Policy: pol}
	for g := 0; g < groups; g++ {
		c.Groups = append(c.Groups, planner.Group{UUID: fmt.Sprintf("00000000-0000-4000-8000-%012d", g+1),
			Name: fmt.Sprintf("g%d", g+1), AllocPolicy: planner.Preferred, Policy: pol})
		for n := 0; n < nodesPerGroup; n++ {
			c.Nodes = append(c.Nodes, planner.Node{Name: fmt.Sprintf("node-g%d-%d", g+1, n+1), Group: g,
				TotalMemory: 16 << 10, ReservedMemory: 1 << 10, TotalDisk: 16 << 10, TotalCPUs: 8,
				TotalSpindles: 8, FreeSpindles: 8, VMCapable: true, Tags: []string{}})
		}
	}
	k := 0
	for g := 0; g < groups; g++ {
		for n := 0; n < nodesPerGroup; n++ {
			k++
			p := g*nodesPerGroup + n
			s := g*nodesPerGroup + (n+1)%nodesPerGroup
			base := planner.Instance{Memory: 512, DiskSpace: 1024, Disks: []planner.Disk{{Size: 1024}},
				VCPUs: 1, SpindleUse: 1, NICs: 1, Tags: []string{}, State: planner.Up, Owner: "demo", Primary: p}
			local, repl := base, base
			local.Name, local.Storage, local.Secondary = fmt.Sprintf("local-%d", k), planner.ZFSLocal, planner.NoNode
			repl.Name, repl.Storage, repl.Secondary = fmt.Sprintf("repl-%d", k), planner.ZFSReplicated, s
			if nodesPerGroup < 2 {
				repl.Secondary = planner.NoNode
			}
			c.Instances = append(c.Instances, local, repl)
		}
	}
	clustergen.Recount(c)
	return c
}

// Workload is what each running instance's process does: it overwrites
// one Block-byte block of the file "ring" (Blocks blocks, so it never
// grows) every Interval, round and round — real, steady deltas for every
// sync — and with each write a record of its timeline
// (executor/process's TimelineFile): the write's sequence number, the
// clock, and whether it is the first since the start. Its next sequence
// number is kept in the file "pos", in its data, so the numbering goes on
// wherever the data moves and a move's downtime is the gap the timeline
// shows across it (process.RestartGap).
type Workload struct {
	Block    int64         // default 16 KiB
	Blocks   int           // default 256
	Interval time.Duration // default 250ms
}

func (w Workload) withDefaults() Workload {
	if w.Block == 0 {
		w.Block = 16 << 10
	}
	if w.Blocks == 0 {
		w.Blocks = 256
	}
	if w.Interval == 0 {
		w.Interval = 250 * time.Millisecond
	}
	return w
}

// Command is the workload's command line; the process runtime runs it in
// its dataset's mountpoint, also given in DROVE_DATA.
//
// It must start again over whatever a stop at any moment left, as a move
// stops it anywhere. "pos" is overwritten in place, one fixed-width
// write, never truncated, so a stop leaves the old number or the new;
// a "pos" that is not a number all the same (an empty one) counts as 0
// rather than killing the workload right after a move called its start
// good (leading zeros are dropped: the shell would read the number as
// octal). A stop after a write but before "pos" moved on makes the next
// start write that number again: its slot of the timeline is rewritten
// with the later time, so the gap read across the move is, if anything,
// one interval longer, never shorter. A failed write says so in its log.
//
// It is bash, not sh, to fork once a write (the dd of the block): the
// clock is $EPOCHREALTIME, the timeline's records and "pos" are written
// by the printf builtin (the timeline through a descriptor that moves on
// a record a write, positioned once at the start and opened again at the
// slots' wrap), and the wait is a read with a timeout on a pipe nobody
// writes. With a dd, a date and a sleep for each write it forked seven
// times, used a seventh of a core at the bench's 20 writes a second on a
// 2-core node, beside the move it was there to load, and fell short of
// its rate by the time its forks took. Writes are paced by the clock,
// one each Interval, however long a write took.
//
// The ring, too, is written through one descriptor, as a database or a
// disk image is: opened at the start and again at the ring's wrap, each
// block's dd given it as its output and seeking from where the last one
// left it (dd seeks its standard output from there, not from the start).
// Opened by name for each write, every write cost zfs-fuse a lookup, an
// open and a release besides the write itself (its attribute and entry
// caches are off, test/zfsenv), on the daemon that runs a move's send
// and receive: the system's first syncs ran at 283–343 MiB/s beside it,
// 285–377 beside the writes through one descriptor (docs/benchmarks.md).
func (w Workload) Command() []string {
	w = w.withDefaults()
	script := fmt.Sprintf(`[ -n "$EPOCHREALTIME" ] || { echo "drove-workload: needs bash 5 or later (\$EPOCHREALTIME)" >&2; exit 1; }
cd "$DROVE_DATA" || exit 1
{ read -r s < pos; } 2>/dev/null
case $s in ''|*[!0-9]*) s=0 ;; esac
s=${s#"${s%%%%[!0]*}"}
s=${s:-0}
exec 3<>%[4]s || exit 1
dd if=/dev/null bs=%[5]d seek=$(( s %% %[6]d )) count=0 conv=notrunc >&3 2>/dev/null ||
  { echo "drove-workload: positioning its timeline in $DROVE_DATA failed" >&2; exit 1; }
exec 4<>ring || { echo "drove-workload: opening ring in $DROVE_DATA failed" >&2; exit 1; }
skip=$(( s %% %[2]d ))
exec {idle}<> <(:) || { echo "drove-workload: no pipe to wait on" >&2; exit 1; }
k=b
next=${EPOCHREALTIME/[!0-9]/}
while :; do
  dd if=/dev/urandom bs=%[1]d count=1 seek=$skip conv=notrunc iflag=fullblock >&4 2>/dev/null ||
    { echo "drove-workload: writing block $(( s %% %[2]d )) of ring in $DROVE_DATA failed" >&2; exit 1; }
  printf '%%020d %%020d %%s\n' $s ${EPOCHREALTIME/[!0-9]/}000 $k >&3 ||
    { echo "drove-workload: writing record $s of its timeline in $DROVE_DATA failed" >&2; exit 1; }
  k=w
  s=$(( s + 1 ))
  printf '%%020d\n' $s 1<>pos
  (( s %% %[6]d )) || exec 3<>%[4]s
  skip=0
  (( s %% %[2]d )) || exec 4<>ring
  next=$(( next + %[3]d ))
  now=${EPOCHREALTIME/[!0-9]/}
  (( next > now )) || next=$now
  pause=$(( next - now ))
  (( pause > 0 )) && printf -v pause '%%d.%%06d' $(( pause / 1000000 )) $(( pause %% 1000000 )) && read -t $pause -u $idle
done`, w.Block, w.Blocks, w.Interval.Microseconds(), process.TimelineFile, process.TimelineRecordBytes, process.TimelineSlots)
	return []string{"/bin/bash", "-c", script, "drove-workload"}
}

// ZFSDemo gives each node of the demo its ZFS driver and provisions the
// instances' datasets.
type ZFSDemo struct {
	// Pools maps every node to its pool (the pool's root dataset); each
	// node keeps its instances under <pool>/drove. Required.
	Pools map[string]string
	// StateDir keeps each node's process pid files and logs. Required.
	StateDir string
	// ContentBytes is the generated content of each new dataset.
	// Default 8 MiB.
	ContentBytes int64
	Workload     Workload
	Logger       *slog.Logger
	// Tune, if set, adjusts each node's zfs.Config before its driver is
	// made (tests wrap the runtime, shorten intervals).
	Tune func(node string, cfg *zfs.Config)

	mu    sync.Mutex
	nodes map[string]*zfsNode
}

type zfsNode struct {
	proc   *process.Driver
	driver *zfs.Driver
}

// Parent is the dataset under which node keeps its instances.
func (z *ZFSDemo) Parent(node string) string { return z.Pools[node] + "/drove" }

// Dataset is instance's dataset on node.
func (z *ZFSDemo) Dataset(node, instance string) string { return z.Parent(node) + "/" + instance }

// node returns node's process driver, made on first use.
func (z *ZFSDemo) node(node string) (*zfsNode, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.nodes == nil {
		z.nodes = map[string]*zfsNode{}
	}
	if n := z.nodes[node]; n != nil {
		return n, nil
	}
	if _, ok := z.Pools[node]; !ok {
		return nil, fmt.Errorf("zfs demo: no pool for node %s", node)
	}
	argv := z.Workload.Command()
	p, err := process.New(process.Config{Node: node, Dir: filepath.Join(z.StateDir, node), Logger: z.logger(),
		// The workload is up once its shell runs; every millisecond of
		// settling is downtime at a switch.
		StopTimeout: 2 * time.Second, Settle: 20 * time.Millisecond,
		Command: func(string) ([]string, error) { return argv, nil }})
	if err != nil {
		return nil, err
	}
	n := &zfsNode{proc: p}
	z.nodes[node] = n
	return n, nil
}

func (z *ZFSDemo) logger() *slog.Logger {
	if z.Logger == nil {
		return slog.Default()
	}
	return z.Logger
}

// Runtime is node's runtime: the workload processes.
func (z *ZFSDemo) Runtime(node string) (zfs.Runtime, error) {
	n, err := z.node(node)
	if err != nil {
		return nil, err
	}
	return process.ZFSRuntime{Driver: n.proc}, nil
}

// Driver is node's executor driver: the ZFS driver over <pool>/drove,
// with the workload processes as its runtime (Config.Driver).
func (z *ZFSDemo) Driver(ctx context.Context, node string) (executor.Driver, error) {
	rt, err := z.Runtime(node)
	if err != nil {
		return nil, err
	}
	if err := ensureDataset(ctx, z.Parent(node)); err != nil {
		return nil, err
	}
	cfg := zfs.Config{Node: node, Parent: z.Parent(node), Runtime: rt, Logger: z.logger()}
	if z.Tune != nil {
		z.Tune(node, &cfg)
	}
	d, err := zfs.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	n, _ := z.node(node)
	z.mu.Lock()
	n.driver = d
	z.mu.Unlock()
	return d, nil
}

// ZFSDriver is node's ZFS driver once Driver has made it (nil before).
func (z *ZFSDemo) ZFSDriver(node string) *zfs.Driver {
	z.mu.Lock()
	defer z.mu.Unlock()
	if n := z.nodes[node]; n != nil {
		return n.driver
	}
	return nil
}

// Provision creates the datasets of c's instances with generated
// content: on the primary, and for zfs-replicated a replica on the
// secondary holding @migrate-snap-1, the base of the next incremental,
// as an earlier replication leaves it. Running instances' workloads are
// started. A dataset that exists already is left as it is.
func (z *ZFSDemo) Provision(ctx context.Context, c *planner.Cluster) error {
	for _, n := range c.Nodes {
		if err := ensureDataset(ctx, z.Parent(n.Name)); err != nil {
			return err
		}
	}
	for _, in := range c.Instances {
		if in.Storage != planner.ZFSLocal && in.Storage != planner.ZFSReplicated {
			return fmt.Errorf("zfs demo: %s has storage %s; the ZFS driver moves zfs-local and zfs-replicated", in.Name, in.Storage)
		}
		primary := c.Nodes[in.Primary].Name
		secondary := ""
		if in.Storage == planner.ZFSReplicated && in.Secondary != planner.NoNode {
			secondary = c.Nodes[in.Secondary].Name
		}
		if err := z.provision(ctx, in.Name, primary, secondary, in.State == planner.Up); err != nil {
			return fmt.Errorf("zfs demo: %s: %w", in.Name, err)
		}
	}
	return nil
}

func (z *ZFSDemo) provision(ctx context.Context, instance, primary, secondary string, running bool) error {
	ds := z.Dataset(primary, instance)
	ok, err := datasetExists(ctx, ds)
	if err != nil || ok {
		return err
	}
	if _, err := zfsCmd(ctx, "zfs", "create", ds); err != nil {
		return err
	}
	mp, err := zfsCmd(ctx, "zfs", "get", "-H", "-o", "value", "mountpoint", ds)
	if err != nil {
		return err
	}
	if err := GenerateContent(strings.TrimSpace(mp), instance, z.contentBytes()); err != nil {
		return err
	}
	if secondary != "" {
		snap := ds + "@migrate-snap-1"
		if _, err := zfsCmd(ctx, "zfs", "snapshot", snap); err != nil {
			return err
		}
		if err := replicate(ctx, snap, z.Dataset(secondary, instance)); err != nil {
			return err
		}
	}
	if !running {
		return nil
	}
	rt, err := z.Runtime(primary)
	if err != nil {
		return err
	}
	return rt.Start(ctx, zfs.Instance{Name: instance, Node: primary, Dataset: ds, Mountpoint: strings.TrimSpace(mp)})
}

func (z *ZFSDemo) contentBytes() int64 {
	if z.ContentBytes == 0 {
		return 8 << 20
	}
	return z.ContentBytes
}

// GenerateContent writes an instance's generated content into dir: a
// file "base" of size bytes seeded by the instance's name, and a small
// "README" saying what it is.
func GenerateContent(dir, instance string, size int64) error {
	readme := fmt.Sprintf("Drove demo instance %s.\nbase: %d generated bytes; ring: what its workload keeps rewriting.\n", instance, size)
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte(readme), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "base"))
	if err != nil {
		return err
	}
	h := fnv.New64a()
	h.Write([]byte(instance))
	var seed [32]byte
	copy(seed[:], fmt.Sprintf("%016x", h.Sum64()))
	w := bufio.NewWriterSize(f, 1<<20)
	_, err = io.CopyN(w, rand.NewChaCha8(seed), size)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Running lists, per node, the instances whose workload runs there.
func (z *ZFSDemo) Running(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	for node := range z.Pools {
		rt, err := z.Runtime(node)
		if err != nil {
			return nil, err
		}
		names, err := children(ctx, z.Parent(node))
		if err != nil {
			return nil, err
		}
		for _, name := range names {
			if run, err := rt.Running(ctx, zfs.Instance{Name: name, Node: node}); err == nil && run {
				out[node] = append(out[node], name)
			}
		}
		slices.Sort(out[node])
	}
	return out, nil
}

// StopWorkloads stops every workload and returns what ran where, for
// StartWorkloads. A process whose dataset ZFS no longer lists (a
// zfs-fuse daemon restarted under a test takes its pools along) is
// killed all the same: one left behind wrote, and forked, for good.
func (z *ZFSDemo) StopWorkloads(ctx context.Context) (map[string][]string, error) {
	defer z.killLeftovers()
	running, err := z.Running(ctx)
	if err != nil {
		return nil, err
	}
	var errs []error
	for node, names := range running {
		rt, _ := z.Runtime(node)
		for _, name := range names {
			errs = append(errs, rt.Stop(ctx, zfs.Instance{Name: name, Node: node, Dataset: z.Dataset(node, name)}))
		}
	}
	return running, errors.Join(errs...)
}

// killLeftovers kills every workload process still running on any node.
func (z *ZFSDemo) killLeftovers() {
	z.mu.Lock()
	defer z.mu.Unlock()
	for _, n := range z.nodes {
		n.proc.Destroy()
	}
}

// StartWorkloads starts the workloads StopWorkloads stopped, where their
// datasets still are.
func (z *ZFSDemo) StartWorkloads(ctx context.Context, running map[string][]string) error {
	var errs []error
	for node, names := range running {
		rt, err := z.Runtime(node)
		if err != nil {
			return err
		}
		for _, name := range names {
			ds := z.Dataset(node, name)
			mp, err := zfsCmd(ctx, "zfs", "get", "-H", "-o", "value", "mountpoint", ds)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, rt.Start(ctx, zfs.Instance{Name: name, Node: node, Dataset: ds, Mountpoint: strings.TrimSpace(mp)}))
		}
	}
	return errors.Join(errs...)
}

// zfsCmd runs a zfs command, bounded in time (zfs-fuse can stall).
func zfsCmd(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = fmt.Errorf("%v: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return string(out), nil
}

func datasetExists(ctx context.Context, ds string) (bool, error) {
	_, err := zfsCmd(ctx, "zfs", "list", "-H", "-o", "name", ds)
	if err != nil && strings.Contains(err.Error(), "does not exist") {
		return false, nil
	}
	return err == nil, err
}

func ensureDataset(ctx context.Context, ds string) error {
	ok, err := datasetExists(ctx, ds)
	if err != nil || ok {
		return err
	}
	_, err = zfsCmd(ctx, "zfs", "create", ds)
	return err
}

// children lists the names of the datasets directly under parent.
func children(ctx context.Context, parent string) ([]string, error) {
	out, err := zfsCmd(ctx, "zfs", "list", "-H", "-o", "name", "-t", "filesystem", "-r", parent)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, ds := range strings.Fields(out) {
		if rest, ok := strings.CutPrefix(ds, parent+"/"); ok && !strings.Contains(rest, "/") {
			names = append(names, rest)
		}
	}
	return names, nil
}

// replicate sends snap whole into target, as a replication does.
func replicate(ctx context.Context, snap, target string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	send := exec.CommandContext(ctx, "zfs", "send", "-R", snap)
	recv := exec.CommandContext(ctx, "zfs", "receive", "-F", target)
	pipe, err := send.StdoutPipe()
	if err != nil {
		return err
	}
	recv.Stdin = pipe
	var recvErr strings.Builder
	recv.Stderr = &recvErr
	if err := send.Start(); err != nil {
		return err
	}
	if err := recv.Run(); err != nil {
		_ = send.Process.Kill()
		_ = send.Wait()
		return fmt.Errorf("zfs receive -F %s: %v: %s", target, err, strings.TrimSpace(recvErr.String()))
	}
	if err := send.Wait(); err != nil {
		return fmt.Errorf("zfs send -R %s: %w", snap, err)
	}
	return nil
}
