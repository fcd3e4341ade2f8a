package zfs

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
)

// The live hand-over of a running instance whose runtime is a
// LiveRuntime (a QEMU VM), in a migration's switch. The syncs before it
// sent the dataset while the guest ran, as for any runtime; the switch
// then
//
//  1. has the target start the incoming VM over the dataset as synced
//     (stream kind runtime, do=incoming; the VM reads nothing of its
//     disk until it resumes);
//  2. pre-copies the guest's memory while it runs here, and after the
//     first pass, holding the pre-copy short of the switchover, sends
//     one more incremental of what was written meanwhile;
//  3. when QEMU has paused the guest before the switchover, writes back
//     what the source's page cache holds, sends the final delta and
//     compares the content sums of the final snapshot on both nodes;
//  4. completes the switchover: the guest resumes on the target over
//     the final snapshot's data, and the target commits.
//
// One writer at all times (seed 004): the guest writes on the source
// until the pause and on the target only after it; the target copy is
// committed only once the guest runs there. Any failure before that —
// the incoming VM, the pre-copy, the final delta, the checksum — leaves
// the guest running on the source over its own data (QEMU resumes it),
// and a fatal one drops the target copy and its incoming VM.

func (m *move) switchLive(ctx context.Context, lr LiveRuntime, base int) (executor.PhaseResult, error) {
	op := m.op
	last := base
	if n := len(m.rep.Syncs); n > 0 {
		last = m.rep.Syncs[n-1].Snapshot
	}
	h, err := m.handOverLive(ctx, lr, last)
	if err != nil {
		// QEMU resumed the guest here: nothing was stopped by this driver.
		return executor.PhaseResult{}, m.switchFailed(ctx, err, false, true)
	}
	m.rep.Downtime = h.down
	// The guest runs on the target: the commit only records it there.
	began := time.Now()
	if err := m.commit(context.WithoutCancel(ctx), h.final, false); err != nil {
		return executor.PhaseResult{}, executor.Fatal(fmt.Errorf("%s runs on %s, but its commit there failed: %w", op.Instance, op.To, err))
	}
	commitTime := time.Since(began)
	m.rep.WorkloadDowntime = m.askWorkloadDowntime(ctx)
	if err := m.dropSnapshots(context.WithoutCancel(ctx), h.final); err != nil {
		m.d.log.Warn("dropping the older migration snapshots failed", "dataset", m.ds, "err", err)
	}
	// The checksum inside the pause stays in the overhead: it reads what
	// changed since the checksum ahead (tens of MiB), not the final delta
	// a prediction sizes it by, so taken out it was predicted at 0.
	return executor.PhaseResult{Bytes: m.sent, Downtime: h.down, WorkloadDowntime: m.rep.WorkloadDowntime,
		Overhead: m.overhead(), Message: h.message(m, commitTime)}, nil
}

// handedOver is what a live hand-over did.
type handedOver struct {
	final    int
	sum      string
	down     time.Duration
	sendTime time.Duration
}

func (h handedOver) message(m *move, commitTime time.Duration) string {
	return fmt.Sprintf("switched %s live to %s: final delta %d bytes, downtime %s%s (final send %s, checksum %s reading %d bytes); commit %s; checksum %s; %s ahead of the switch",
		m.op.Instance, m.op.To, m.rep.FinalDelta, h.down.Round(time.Millisecond), m.rep.workloadText(), h.sendTime.Round(time.Millisecond),
		m.rep.ChecksumTime.Round(time.Millisecond), m.rep.ChecksumRead, commitTime.Round(time.Millisecond),
		h.sum, m.rep.AheadTime.Round(time.Millisecond))
}

// handOverLive runs steps 1 to 4 from the target's holding snapshot
// last: on success the guest runs on the target, not yet committed; on
// an error it runs here.
func (m *move) handOverLive(ctx context.Context, lr LiveRuntime, last int) (handedOver, error) {
	op := m.op
	var h handedOver
	m.progress("starting the incoming VM of "+op.Instance+" on "+op.To+" over the synced dataset", 0, 0)
	r, err := m.ask(ctx, kindRuntime, map[string]string{"do": "incoming"})
	if err != nil {
		return h, err
	}
	// Catch up, once the first pre-copy pass is done, with what was
	// written since the last sync (the switch's dispatch, the incoming
	// VM's start, that pass): the final delta in the pause is then only
	// what the send of this one and the last passes add. (Verifying the
	// catch-up too, so that the pause re-reads less, costs a clone on
	// the source, seconds on zfs-fuse under load, while the guest writes
	// on: the pause then had more to re-read, not less.)
	var snaps []int // listed after the catch-up, out of the pause
	catchUp := func(ctx context.Context) error {
		var err error
		if last, err = m.sendWith(ctx, false, map[string]string{"snaps": strconv.Itoa(last)}, nil); err != nil {
			return err
		}
		snaps, err = m.listSnapshots(ctx)
		return err
	}
	atPause := func(ctx context.Context) error {
		in := m.d.instance(ctx, op.Instance)
		if err := syncMount(in.Mountpoint); err != nil {
			return fmt.Errorf("writing back %s at the pause: %w", in.Mountpoint, err)
		}
		var err error
		if h.final, err = m.sendWith(ctx, true, map[string]string{"snaps": strconv.Itoa(last)}, snaps); err != nil {
			return err
		}
		h.sendTime = m.rep.Syncs[len(m.rep.Syncs)-1].Duration
		began := time.Now()
		h.sum, err = m.verify(ctx, h.final, m.verified)
		m.rep.ChecksumTime = time.Since(began)
		return err
	}
	in := m.d.instance(ctx, op.Instance)
	rate := func() int64 { return m.lim.Rate() }
	h.down, err = lr.HandOver(ctx, in, op.To, r["addr"], rate, catchUp, atPause, m.report)
	return h, err
}

// runLive is the bulk path's switch for a running instance whose runtime
// hands over live: done is false when the hand-over failed, the guest
// runs here, and AllowFailover asks for the offline switch instead.
func (m *move) runLive(ctx context.Context, lr LiveRuntime, res executor.Result) (executor.Result, bool, error) {
	op := m.op
	m.phase = events.PhaseSwitch
	h, err := m.handOverLive(ctx, lr, m.rep.Syncs[len(m.rep.Syncs)-1].Snapshot)
	if err != nil {
		if op.AllowFailover && ctx.Err() == nil {
			m.d.log.Warn("live hand-over failed; allow_failover: moving it offline", "instance", op.Instance, "err", err)
			m.progress(fmt.Sprintf("live hand-over failed (%v); allow_failover: stop, final delta, start on %s", err, op.To), 0, 0)
			if _, aerr := m.request(ctx, kindAbort, map[string]string{"why": "live hand-over failed; moving offline", "offline": "true"}); aerr != nil {
				return res, true, m.fail(ctx, aerr, false, true)
			}
			m.verified, m.delta = 0, nil // the target's copy is gone: the offline switch checks it all
			m.fellBack = err.Error()
			return res, false, nil
		}
		return res, true, m.fail(ctx, err, false, true)
	}
	m.rep.Downtime = h.down
	began := time.Now()
	if _, err := m.request(context.WithoutCancel(ctx), kindCommit, map[string]string{"keep": "", "start": "false"}); err != nil {
		return res, true, executor.Fatal(fmt.Errorf("%s runs on %s, but its commit there failed: %w", op.Instance, op.To, err))
	}
	if err := m.cleanupSource(context.WithoutCancel(ctx), ""); err != nil {
		m.d.log.Warn("source cleanup after the move failed; leftovers stay", "dataset", m.ds, "err", err)
	}
	res.Downtime, res.Bytes, res.Syncs = h.down, m.sent, len(m.rep.Syncs)
	res.Message = h.message(m, time.Since(began))
	return res, true, nil
}

// stopIncoming stops the incoming VM of a live hand-over before the
// target's copy is rolled back: before a commit nothing else of the
// instance runs on a target.
func (d *Driver) stopIncoming(ctx context.Context, name string) error {
	if lr, ok := d.cfg.Runtime.(LiveRuntime); ok {
		return lr.Stop(ctx, d.instance(ctx, name))
	}
	return nil
}

// incomingHere starts the incoming instance on the target (kindRuntime,
// do=incoming).
func (d *Driver) incomingHere(ctx context.Context, name string) (map[string]string, error) {
	lr, ok := d.cfg.Runtime.(LiveRuntime)
	if !ok {
		return refuse("the runtime on %s does not receive instances live", d.cfg.Node)
	}
	addr, err := lr.Incoming(ctx, d.instance(ctx, name))
	if err != nil {
		return nil, err
	}
	return map[string]string{"addr": addr}, nil
}

// syncMount writes back the file system of a mountpoint: a snapshot
// holds only what reached ZFS, and with zfs-fuse the page cache may
// still hold the guest's last writes.
func syncMount(dir string) error {
	if dir == "" || dir == "-" || dir == "none" || dir == "legacy" {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
