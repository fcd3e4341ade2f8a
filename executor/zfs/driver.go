package zfs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
)

// Config is what a Driver needs. Zero fields take the defaults listed with
// them; Validate reports every problem at once.
type Config struct {
	// Node is the node this driver acts for (the executor's node). Required.
	Node string
	// Parent is the dataset under which this node keeps one dataset per
	// instance, <Parent>/<instance>. It must exist. Required.
	Parent string
	// Runtime starts and stops instances on this node. Default: a
	// MemRuntime with nothing running.
	Runtime Runtime
	// Resync is RFD 34's rule for when to stop re-syncing and switch.
	Resync ResyncRule
	// ListenAddr is where Receive listens when the executor gives no
	// Op.ListenAddr. Default "127.0.0.1:0".
	ListenAddr string
	// ReceiverWait bounds how long Run waits for and retries the target
	// side (it may start after the source, or be restarting). Default 60s.
	ReceiverWait time.Duration
	// SendBytesPerSecond caps sends when the opcode gives no cap
	// (Op.SendBytesPerSecond 0); 0 means no cap.
	SendBytesPerSecond int64
	// ReportInterval is how often a running send reports progress.
	// Default 250ms.
	ReportInterval time.Duration
	// Logger gets the driver's logs. Default slog.Default().
	Logger *slog.Logger
	// OnMove, if set, is called with the report of every move this node
	// sent, successful or not (tests and benchmarks read it).
	OnMove func(MoveReport)
}

// ResyncRule is RFD 34's re-sync rule: switch when the last incremental
// sent less than MaxBytes, or after MaxSyncs syncs in all, or when the
// last incremental is not at least 10% smaller than the one ShrinkWindow
// syncs before it.
type ResyncRule struct {
	MaxBytes     int64 // default 50 MB
	MaxSyncs     int   // default 10
	ShrinkWindow int   // default 3
}

// decide says whether to switch after the incrementals so far (sizes in
// order, the full send not included) and syncs passes in all.
func (r ResyncRule) decide(incs []int64, syncs int) (bool, string) {
	if len(incs) > 0 && incs[len(incs)-1] < r.MaxBytes {
		return true, fmt.Sprintf("last incremental %d bytes is under %d", incs[len(incs)-1], r.MaxBytes)
	}
	if syncs >= r.MaxSyncs {
		return true, fmt.Sprintf("%d syncs reached the limit", syncs)
	}
	if w := r.ShrinkWindow; len(incs) > w {
		last, before := incs[len(incs)-1], incs[len(incs)-1-w]
		if float64(last) > 0.9*float64(before) {
			return true, fmt.Sprintf("incrementals stopped shrinking over the last %d syncs (%d → %d bytes)", w, before, last)
		}
	}
	return false, ""
}

func (c Config) withDefaults() Config {
	if c.Runtime == nil {
		c.Runtime = NewMemRuntime()
	}
	if c.Resync.MaxBytes == 0 {
		c.Resync.MaxBytes = 50 << 20
	}
	if c.Resync.MaxSyncs == 0 {
		c.Resync.MaxSyncs = 10
	}
	if c.Resync.ShrinkWindow == 0 {
		c.Resync.ShrinkWindow = 3
	}
	if c.ListenAddr == "" {
		c.ListenAddr = "127.0.0.1:0"
	}
	if c.ReceiverWait == 0 {
		c.ReceiverWait = 60 * time.Second
	}
	if c.ReportInterval == 0 {
		c.ReportInterval = 250 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports every problem in c at once, after defaults.
func (c Config) Validate() error {
	c = c.withDefaults()
	var ps []string
	if strings.TrimSpace(c.Node) == "" {
		ps = append(ps, "Node: missing")
	}
	if strings.TrimSpace(c.Parent) == "" || strings.ContainsAny(c.Parent, "@ ") {
		ps = append(ps, fmt.Sprintf("Parent: %q is not a dataset name", c.Parent))
	}
	if c.Resync.MaxBytes < 0 || c.Resync.MaxSyncs < 1 || c.Resync.ShrinkWindow < 1 {
		ps = append(ps, fmt.Sprintf("Resync: %+v (want MaxBytes ≥ 0, MaxSyncs and ShrinkWindow ≥ 1)", c.Resync))
	}
	if c.ReceiverWait < 0 || c.ReportInterval < 0 || c.SendBytesPerSecond < 0 {
		ps = append(ps, "ReceiverWait, ReportInterval, SendBytesPerSecond: negative")
	}
	if len(ps) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, strings.Join(ps, "; "))
	}
	return nil
}

// Driver is the ZFS storage driver of one node: executor.Driver on the
// source side of a move, executor.Receiver on the target side.
type Driver struct {
	cfg  Config
	log  *slog.Logger
	feat Features

	mu       sync.Mutex
	reports  []MoveReport
	recvLock map[string]*sync.Mutex  // one receive per dataset at a time
	verified map[string]verifiedSums // per dataset: the move's last verified snapshot

	mig migBook // per-instance migrations' phases done (migrate.go)

	stuck sync.Map // snapshot name → when it was found busy past busyWait (dropSnapshot)

	// beforeTargetSum, when set, runs on the target before it sums a
	// move's snapshot (the directory it reads, snapshot, prev as the
	// source asked): the one place a test can damage the target's copy
	// after the final delta and before the switch's checksum
	// (export_test.go).
	beforeTargetSum atomic.Pointer[func(ctx context.Context, root string, n, prev int)]
}

// verifiedSums are the file sums of the last snapshot a move verified.
type verifiedSums struct {
	key   string // the move (executor.Op.Key)
	snap  int
	files map[string]fileSum
}

// contentSum checksums snapshot n of the move's dataset. With prev > 0 it
// re-reads only the files changed since snapshot prev, if this node
// verified prev in the same move, and of those only the blocks dl says
// were sent since (nil: whole); the sums are kept for a later call.
// The dataset itself is read instead of a clone of n when the instance
// does not run on this node and n is the newest snapshot (a target
// before the commit; a source after the stop or in the pause). A source
// VM in its outgoing pre-copy writes although it is not "up": do not
// checksum the source then.
func (d *Driver) contentSum(ctx context.Context, op executor.Op, n, prev int, dl *delta, before func(root string)) (treeSum, error) {
	ds := d.Dataset(op.Instance)
	d.mu.Lock()
	var files map[string]fileSum
	if v, ok := d.verified[ds]; ok && prev > 0 && v.key == op.Key() && v.snap == prev {
		files = v.files
	}
	d.mu.Unlock()
	running, err := d.cfg.Runtime.Running(ctx, d.instance(ctx, op.Instance))
	if err != nil {
		return treeSum{}, err
	}
	if files == nil {
		dl = nil // no sums of prev here to start from
	}
	ts, err := checksumSnapshot(ctx, d.cfg.Parent, op.Instance, n, files, dl, !running, before)
	if err == nil {
		d.mu.Lock()
		d.verified[ds] = verifiedSums{key: op.Key(), snap: n, files: ts.files}
		d.mu.Unlock()
	}
	return ts, err
}

// forgetSums drops what a move verified once it has ended.
func (d *Driver) forgetSums(op executor.Op) {
	ds := d.Dataset(op.Instance)
	d.mu.Lock()
	if v, ok := d.verified[ds]; ok && v.key == op.Key() {
		delete(d.verified, ds)
	}
	d.mu.Unlock()
}

var (
	_ executor.Driver   = (*Driver)(nil)
	_ executor.Receiver = (*Driver)(nil)
)

// New checks cfg, checks that the parent dataset exists, and detects what
// the local ZFS can do.
func New(ctx context.Context, cfg Config) (*Driver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	ok, err := exists(ctx, cfg.Parent)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: Parent: dataset %q does not exist", ErrInvalidConfig, cfg.Parent)
	}
	d := &Driver{cfg: cfg, log: cfg.Logger.With("driver", "zfs", "node", cfg.Node),
		feat: Detect(ctx, cfg.Parent), recvLock: map[string]*sync.Mutex{}, verified: map[string]verifiedSums{}}
	d.log.Info("zfs features detected", "mode", d.feat.Mode())
	return d, nil
}

// Features is what the local ZFS was found to do.
func (d *Driver) Features() Features { return d.feat }

// Runtime is the driver's runtime.
func (d *Driver) Runtime() Runtime { return d.cfg.Runtime }

// Dataset is the instance's dataset on this node.
func (d *Driver) Dataset(instance string) string { return d.cfg.Parent + "/" + instance }

func (d *Driver) instance(ctx context.Context, name string) Instance {
	ds := d.Dataset(name)
	mp, _ := prop(ctx, ds, "mountpoint")
	return Instance{Name: name, Node: d.cfg.Node, Dataset: ds, Mountpoint: mp}
}

// Reports returns the reports of the moves this node sent, oldest first.
func (d *Driver) Reports() []MoveReport {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]MoveReport(nil), d.reports...)
}

func (d *Driver) record(r MoveReport) {
	d.mu.Lock()
	d.reports = append(d.reports, r)
	d.mu.Unlock()
	if d.cfg.OnMove != nil {
		d.cfg.OnMove(r)
	}
}

// MoveReport is what one Run sent and found.
type MoveReport struct {
	Key      string
	Kind     events.OpID
	Instance string
	Syncs    []SyncReport
	// FinalDelta is the bytes of the switch's final incremental.
	FinalDelta int64
	Downtime   time.Duration
	// StopTime and StartTime are the switch's stop of the instance on
	// the source and its start on the target: with the final send, what
	// Downtime is made of. A switch that starts the instance in its
	// commit (the bulk path, source.go) has no StartTime of its own.
	StopTime, StartTime time.Duration
	// WorkloadDowntime is the downtime the workload saw, from its own
	// timeline on the target (WorkloadClocked); 0 when there is none.
	WorkloadDowntime time.Duration
	// Checksum is the content sum both sides agreed on at the switch
	// point (or the source's, on a mismatch).
	Checksum string
	// ChecksumTime is how long the checksums of both sides took at the
	// switch (in parallel); it is part of the downtime. AheadTime is the
	// checksum ahead of the switch, while the instance still ran.
	ChecksumTime, AheadTime time.Duration
	// ChecksumRead and ChecksumReused are the source's bytes read for the
	// switch's checksum and taken from the checksum ahead of it.
	ChecksumRead, ChecksumReused int64
	Mode                         string
	Err                          error
}

// workloadText is the workload's figure for a message: empty when there
// is none.
func (r MoveReport) workloadText() string {
	if r.WorkloadDowntime == 0 {
		return ""
	}
	return fmt.Sprintf(" (the workload's timeline: %s)", r.WorkloadDowntime.Round(time.Millisecond))
}

// FinalSync is the switch's final delta: the report's last send, if it
// was the final one (a report of a sync alone has none).
func (r MoveReport) FinalSync() (SyncReport, bool) {
	if n := len(r.Syncs); n > 0 && r.Syncs[n-1].Final {
		return r.Syncs[n-1], true
	}
	return SyncReport{}, false
}

// SyncReport is one send.
type SyncReport struct {
	Snapshot    int
	Incremental bool
	Final       bool
	Estimate    int64
	Bytes       int64
	Duration    time.Duration
}

const snapPrefix = "migrate-snap-"

func snapName(n int) string { return snapPrefix + strconv.Itoa(n) }

func snapNumber(s string) (int, bool) {
	rest, ok := strings.CutPrefix(s, snapPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

func supported(s events.StorageKind) bool {
	return s == events.StorageZFSLocal || s == events.StorageZFSReplicated
}

// DropReplica destroys this node's replica of instance, once the
// inventory shows this node is no longer its secondary (see
// executor.ReplicaDropper). A running instance is never dropped.
func (d *Driver) DropReplica(ctx context.Context, instance string) error {
	in := d.instance(ctx, instance)
	if run, err := d.cfg.Runtime.Running(ctx, in); err != nil || run {
		return errors.Join(err, fmt.Errorf("zfs: %s runs on %s; replica kept", instance, d.cfg.Node))
	}
	return destroy(ctx, d.Dataset(instance))
}

var _ executor.ReplicaDropper = (*Driver)(nil)
