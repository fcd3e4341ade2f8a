package qemu

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/zfs"
)

// ZFSRuntime lets the ZFS storage driver start and stop this node's VMs
// (zfs.Config.Runtime): the VM's raw disk is DiskFile in the instance's
// mounted dataset. With it a zfs-local or zfs-replicated instance moves
// as RFD 34's offline migration does — re-syncs while the VM runs, then
// the VM stops on the source, the final delta goes, and the VM boots on
// the target from the received disk.
type ZFSRuntime struct {
	Driver *Driver
	// DiskFile is the disk image's name inside the dataset. Default
	// "disk.raw".
	DiskFile string
	// Size returns the instance's memory and vCPUs; nil means the
	// driver's DefaultMemoryMiB and one vCPU.
	Size func(instance string) events.Size
}

var _ zfs.Runtime = ZFSRuntime{}

func (r ZFSRuntime) spec(in zfs.Instance) Spec {
	file := r.DiskFile
	if file == "" {
		file = "disk.raw"
	}
	s := Spec{Instance: in.Name, Disk: filepath.Join(in.Mountpoint, file)}
	if r.Size != nil {
		sz := r.Size(in.Name)
		s.MemoryMiB, s.VCPUs = sz.MemoryMiB, sz.VCPUs
	}
	return s
}

// Start boots the VM from the dataset's disk; a VM already running is
// left alone (the storage driver wants Start idempotent).
func (r ZFSRuntime) Start(ctx context.Context, in zfs.Instance) error {
	if run, _ := r.Running(ctx, in); run {
		return nil
	}
	return r.Driver.StartSpec(ctx, r.spec(in))
}

// Stop shuts the VM down; stopping what does not run is not an error.
func (r ZFSRuntime) Stop(ctx context.Context, in zfs.Instance) error {
	return r.Driver.Stop(ctx, in.Name)
}

// Running says whether the VM runs here and its guest is not paused.
func (r ZFSRuntime) Running(ctx context.Context, in zfs.Instance) (bool, error) {
	st, err := r.Driver.Status(ctx, in.Name)
	if err != nil {
		return false, err
	}
	return st.Status == events.StatusUp, nil
}

var (
	_ zfs.LiveRuntime     = ZFSRuntime{}
	_ zfs.WorkloadClocked = ZFSRuntime{}
)

// WorkloadDowntime is the pause the VM's guest saw at its resume here,
// read from the clock stamps a writing guest (Guest) leaves on its disk
// (GuestDowntime): it waits up to guestClockWait for them. The pause is
// one since this node started the VM (-incoming, for a hand-over), not
// an earlier one the guest saw on the source. A VM that does not run
// here, or a guest that stamps nothing, has no figure.
func (r ZFSRuntime) WorkloadDowntime(ctx context.Context, in zfs.Instance) (time.Duration, error) {
	if run, err := r.Running(ctx, in); err != nil || !run {
		return 0, fmt.Errorf("%w: %s does not run on %s (%v)", ErrNoGuestClock, in.Name, in.Node, err)
	}
	v, err := r.Driver.lookup(ctx, in.Name)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, guestClockWait)
	defer cancel()
	return GuestDowntime(ctx, r.spec(in).Disk, v.started)
}

// guestClockWait bounds the wait for a guest's clock stamps after its
// resume: GuestDowntime needs three to four seconds of its writes.
const guestClockWait = 15 * time.Second

// Incoming starts the instance's VM waiting for its memory (-incoming),
// its disk the dataset's as received so far, listening on an ephemeral
// port of ListenHost. A VM of the instance left here is destroyed first:
// nothing runs on the target of a hand-over before it.
func (r ZFSRuntime) Incoming(ctx context.Context, in zfs.Instance) (string, error) {
	d := r.Driver
	spec := r.spec(in)
	spec.Incoming = true
	if spec.MemoryMiB <= 0 {
		spec.MemoryMiB = d.cfg.DefaultMemoryMiB
	}
	if v, err := d.lookup(ctx, in.Name); err == nil {
		d.drop(in.Name, v)
		v.kill()
	}
	v, err := d.startVM(ctx, spec)
	if err != nil {
		return "", executor.Transient(err)
	}
	d.put(in.Name, v)
	d.m.vms.Inc()
	inc := &incoming{d: d, op: executor.Op{Instance: in.Name}, v: v, log: d.log.With("instance", in.Name, "side", "target")}
	if err := d.setCapabilities(v); err != nil {
		return "", inc.destroy(executor.Transient(err))
	}
	addr, err := inc.listen()
	if err != nil {
		return "", err
	}
	inc.log.Info("incoming VM listening for a hand-over", "addr", addr, "disk", spec.Disk)
	return addr, nil
}

// HandOver moves the running VM to the incoming one at addr: pre-copy
// (held after its first pass, with a 1 ms downtime limit, while catchUp
// runs), then in QEMU's pre-switchover pause atPause (the storage's
// final delta), then the switchover; see zfs.LiveRuntime. Its Progress says
// the RAM figures of query-migrate; past the completion timeout it goes
// post-copy if allowed.
func (r ZFSRuntime) HandOver(ctx context.Context, in zfs.Instance, to, addr string, rate func() int64,
	catchUp, atPause func(context.Context) error, report func(executor.Progress)) (time.Duration, error) {
	d := r.Driver
	v, err := d.lookup(ctx, in.Name)
	if err != nil {
		return 0, executor.Fatal(err)
	}
	size := events.Size{}
	if r.Size != nil {
		size = r.Size(in.Name)
	}
	op := executor.Op{Request: "handover-" + in.Name, Kind: events.OpInstanceMigrate, Mode: events.ModeMigrateLive,
		Instance: in.Name, Size: size, RunState: events.RunRunning, From: in.Node, To: to, SendBytesPerSecond: rate()}
	if _, _, err := d.setMigrationParameters(op, v); err != nil {
		return 0, executor.Transient(err)
	}
	caps := []capability{{"pause-before-switchover", true}}
	if err := d.exec(v, "migrate-set-capabilities", map[string]any{"capabilities": caps}, nil); err != nil {
		return 0, executor.Transient(err)
	}
	if catchUp != nil {
		if err := d.exec(v, "migrate-set-parameters", map[string]any{"downtime-limit": holdDowntimeMS}, nil); err != nil {
			return 0, executor.Transient(err)
		}
	}
	evs, unsub := v.qmp.Subscribe()
	defer unsub()
	if err := d.exec(v, "migrate", map[string]any{"uri": "tcp:" + addr}, nil); err != nil {
		return 0, executor.Transient(err)
	}
	o := &outgoing{d: d, op: op, v: v, wasRunning: true, hook: atPause, catchUp: catchUp, completion: d.completionTimeout(size),
		log: d.log.With("instance", in.Name, "hand-over to", to)}
	o.s = &sourceState{op: op, v: v, report: report, began: time.Now()}
	res, err := o.watch(ctx, evs)
	return res.Downtime, err
}
