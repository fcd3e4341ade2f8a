package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
)

// move is one Run of one opcode: cumulative progress, the phases it passed
// and what it sent.
type move struct {
	d      *Driver
	ctx    context.Context
	op     executor.Op
	report func(executor.Progress)

	cur, total int64 // progress: bytes (failover: steps)
	syncs      int
	sent       int64
	downtime   time.Duration
	checked    map[string]bool // phases whose fault checkpoint has passed
	any        bool            // some checkpoint has passed
}

// storage classes, as the sim moves them (the rules are the kind's own).
func (m *move) mirrored() bool { return m.op.Storage.InternallyMirrored() }
func (m *move) shared() bool   { return m.op.Storage.Shared() }
func (m *move) copied() bool   { return m.op.Storage.CopiedOnMove() }

func (m *move) running() bool { return m.op.RunState == events.RunRunning }

func (m *move) diskBytes() int64 {
	var n int64
	for _, d := range m.op.Size.DisksMiB {
		n += d
	}
	return n * m.d.cfg.DiskScale
}

func (m *move) memoryBytes() int64 { return m.op.Size.MemoryMiB * m.d.cfg.MemoryScale }

// alreadyThere reports whether the opcode's effect is already in place, as
// after a crash between the move and its end events.
func (m *move) alreadyThere(cur place) (bool, string) {
	op := m.op
	if op.Kind == events.OpInstanceReplaceDisks {
		if cur.primary == op.From && cur.secondary == op.To {
			return true, fmt.Sprintf("%s already has its replica on %s", op.Instance, op.To)
		}
		return false, ""
	}
	if cur.primary == op.To {
		return true, fmt.Sprintf("%s already runs on %s", op.Instance, op.To)
	}
	return false, ""
}

// after is the placement once the opcode succeeded.
func (m *move) after(cur place) place {
	if m.op.Kind == events.OpInstanceReplaceDisks {
		return place{primary: cur.primary, secondary: m.op.To}
	}
	if m.mirrored() {
		return place{primary: m.op.To, secondary: m.op.From}
	}
	return place{primary: m.op.To}
}

func (m *move) result() executor.Result {
	verb := map[events.OpID]string{events.OpInstanceMigrate: "migrated", events.OpInstanceFailover: "failed over",
		events.OpInstanceReplaceDisks: "replaced the secondary of"}[m.op.Kind]
	return executor.Result{
		Syncs: m.syncs, Bytes: m.sent, Downtime: m.downtime,
		Message: fmt.Sprintf("%s %s from %s to %s: %d sync passes, %s sent, downtime %s",
			verb, m.op.Instance, m.op.From, m.op.To, m.syncs, events.FormatBytes(m.sent), m.downtime.Round(time.Millisecond)),
	}
}

func (m *move) emit(phase string, rate int64, msg string) {
	p := executor.Progress{Phase: phase, Current: m.cur, Total: m.total, BytesPerSecond: rate, Message: msg}
	if rate > 0 {
		p.ETA = time.Duration(float64(m.total-m.cur) / float64(rate) * float64(time.Second))
	}
	m.report(p)
}

// checkpoint is where injected faults strike: once per phase, halfway
// through the phase's first transfer. Faults without a phase strike at the
// first checkpoint of the attempt where dflt allows it.
func (m *move) checkpoint(phase string, dflt bool) error {
	if m.checked[phase] {
		return nil
	}
	m.checked[phase] = true
	first := !m.any && dflt
	m.any = m.any || dflt
	f := m.d.strike(m.op, phase, first)
	if f == nil {
		return nil
	}
	where := fmt.Sprintf("%s of %s from %s to %s, %s phase, attempt %d, %s of %s sent",
		m.op.ShortKind(), m.op.Instance, m.op.From, m.op.To, phase, m.op.Attempt, events.FormatBytes(m.cur), events.FormatBytes(m.total))
	if f.Kind == FaultTransient {
		// The target keeps what it received: the next attempt resumes.
		return executor.Transient(fmt.Errorf("%w: connection to %s lost during %s", ErrInjected, m.op.To, where))
	}
	m.forget()
	return executor.Fatal(fmt.Errorf("%w: %s refused the data during %s; rolled back", ErrInjected, m.op.To, where))
}

// rollback undoes what the attempt left on the target and reports the
// abort: the source is as it was.
func (m *move) rollback(phase string, cause error) error {
	m.forget()
	return fmt.Errorf("%w: sim: %s of %s aborted in %s phase, rolled back (%v)",
		executor.ErrCanceled, m.op.ShortKind(), m.op.Instance, phase, cause)
}

func (m *move) forget() {
	m.d.mu.Lock()
	delete(m.d.resume, m.op.Key())
	m.d.mu.Unlock()
}

// transfer sends n bytes (already counted in m.total) in steps of
// simulated time and returns what the instance dirtied meanwhile. With
// resumable set, it starts where an earlier attempt's send broke off.
func (m *move) transfer(ctx context.Context, phase, label string, n int64, dirtying, resumable bool) (int64, error) {
	cfg := m.d.cfg
	var done, dirtied int64
	if resumable {
		m.d.mu.Lock()
		done = min(m.d.resume[m.op.Key()], n)
		m.d.mu.Unlock()
		if done > 0 {
			m.cur += done
			label = fmt.Sprintf("%s (resuming at %s)", label, events.FormatBytes(done))
		}
	}
	rate := func() int64 { return cfg.Bandwidth }
	if cfg.Links != nil && n > 0 {
		id := cfg.Links.open(m.op.From, m.op.To)
		defer cfg.Links.close(id)
		rate = func() int64 { return cfg.Links.rate(id) }
	}
	bw := rate()
	m.emit(phase, bw, label)
	for done < n {
		chunk, dt := max(int64(float64(bw)*cfg.Step.Seconds()), 1), cfg.Step
		if chunk >= n-done {
			chunk = n - done
			dt = time.Duration(float64(chunk) / float64(bw) * float64(time.Second))
		}
		if err := cfg.Clock.Sleep(ctx, dt); err != nil {
			return 0, m.rollback(phase, err)
		}
		done += chunk
		m.cur += chunk
		m.sent += chunk
		if dirtying {
			dirtied += int64(float64(cfg.DirtyRate) * dt.Seconds())
		}
		if resumable {
			m.d.mu.Lock()
			m.d.resume[m.op.Key()] = done
			m.d.mu.Unlock()
		}
		if done*2 >= n {
			if err := m.checkpoint(phase, true); err != nil {
				return 0, err
			}
		}
		m.emit(phase, bw, label)
		bw = rate()
	}
	return dirtied, nil
}

// resync sends incrementals of what the last pass dirtied until RFD 34's
// re-sync rule says to switch, and returns the delta left for the switch.
func (m *move) resync(phase, what string, delta int64, dirtying bool) (int64, error) {
	cfg := m.d.cfg
	var history []int64
	for {
		n := len(history)
		stalled := n >= cfg.ShrinkWindow && history[n-1] >= history[n-cfg.ShrinkWindow]
		if delta < cfg.SwitchBelow || n+1 >= cfg.MaxSyncs || stalled {
			return delta, nil
		}
		m.total += delta
		m.syncs++
		label := fmt.Sprintf("%s re-sync %d: %s dirtied during the last pass", what, n+1, events.FormatBytes(delta))
		dirtied, err := m.transfer(m.ctx, phase, label, delta, dirtying, false)
		if err != nil {
			return 0, err
		}
		history = append(history, delta)
		delta = dirtied
	}
}

// syncDisks is RFD 34's sync phase for copied storage: a full send, then
// incrementals until the delta is small. It returns the delta left.
func (m *move) syncDisks(target string) (int64, error) {
	disk := m.diskBytes()
	m.total += disk
	m.syncs++
	dirtied, err := m.transfer(m.ctx, events.PhaseSync, "full send of the disks to "+target, disk, m.running(), true)
	if err != nil {
		return 0, err
	}
	return m.resync(events.PhaseSync, "disk", dirtied, m.running())
}

// replaceDisks builds a new replica on To from the primary and drops the
// old one.
func (m *move) replaceDisks(cur place) error {
	if !m.mirrored() {
		return executor.Fatalf("sim: replace-disks needs mirrored storage, %s has %s", m.op.Instance, m.op.Storage)
	}
	m.emit(events.PhaseBegin, 0, fmt.Sprintf("reserving %s on %s for a new replica of %s",
		events.FormatBytes(m.diskBytes()), m.op.To, m.op.Instance))
	if err := m.checkpoint(events.PhaseBegin, false); err != nil {
		return err
	}
	delta, err := m.syncDisks(m.op.To)
	if err != nil {
		return err
	}
	// From here the new replica follows writes; the last delta closes the gap.
	m.total += delta
	m.syncs++
	if _, err := m.transfer(m.ctx, events.PhaseSwitch, "final delta to the new replica on "+m.op.To, delta, false, false); err != nil {
		return err
	}
	if err := m.checkpoint(events.PhaseSwitch, true); err != nil {
		return err
	}
	old := cur.secondary
	if old == "" {
		old = "no node"
	}
	m.emit(events.PhaseSwitch, 0, fmt.Sprintf("secondary switched to %s; old replica on %s dropped", m.op.To, old))
	return nil
}

// migrate moves the instance with as little downtime as its storage
// allows: mirrored storage sends the replica's lag, copied storage (RFD 34)
// syncs then stops for a final delta, shared storage sends nothing; a
// running instance's memory is pre-copied unless its storage is copied
// (RFD 34 migrations are offline: stop, final delta, start).
func (m *move) migrate(cur place) error {
	if !m.mirrored() && !m.shared() && !m.copied() {
		return executor.Fatalf("sim: %s storage of %s cannot move", m.op.Storage, m.op.Instance)
	}
	if m.mirrored() && cur.secondary != "" && cur.secondary != m.op.To {
		return executor.Fatal(fmt.Errorf("%w: %s's replica is on %s, not %s", ErrNotThere, m.op.Instance, cur.secondary, m.op.To))
	}
	m.emit(events.PhaseBegin, 0, fmt.Sprintf("reserving %s for %s", m.op.To, m.op.Instance))
	if err := m.checkpoint(events.PhaseBegin, false); err != nil {
		return err
	}
	var delta int64
	switch {
	case m.mirrored():
		if m.running() {
			lag := int64(float64(m.d.cfg.DirtyRate) * m.d.cfg.ReplicationLag.Seconds())
			m.total += lag
			m.syncs++
			if _, err := m.transfer(m.ctx, events.PhaseSync, "catching up the replica on "+m.op.To, lag, true, false); err != nil {
				return err
			}
		}
	case m.copied():
		var err error
		if delta, err = m.syncDisks(m.op.To); err != nil {
			return err
		}
	}
	if !m.running() {
		return m.handover(cur, "handing the stopped instance over to "+m.op.To)
	}
	if m.copied() {
		return m.offlineSwitch(delta)
	}
	return m.liveSwitch(cur)
}

// liveSwitch pre-copies memory while the instance runs, then pauses it for
// the last dirty pages and resumes it on the target.
func (m *move) liveSwitch(cur place) error {
	mem := m.memoryBytes()
	m.total += mem
	dirtied, err := m.transfer(m.ctx, events.PhaseSwitch, "memory pre-copy to "+m.op.To, mem, true, false)
	if err != nil {
		return err
	}
	last, err := m.resync(events.PhaseSwitch, "memory", dirtied, true)
	if err != nil {
		return err
	}
	if err := m.checkpoint(events.PhaseSwitch, true); err != nil {
		return err
	}
	// Point of no return: the instance is paused and its last pages go to
	// the target; aborting now would cost more than finishing.
	m.total += last
	begin := m.d.cfg.Clock.Now()
	label := fmt.Sprintf("paused on %s; copying the last %s of memory", m.op.From, events.FormatBytes(last))
	if _, err := m.transfer(context.WithoutCancel(m.ctx), events.PhaseSwitch, label, last, false, false); err != nil {
		return err
	}
	m.downtime += m.d.cfg.Clock.Now().Sub(begin)
	return m.handover(cur, "resumed on "+m.op.To)
}

// offlineSwitch is RFD 34's switch: stop, send the final delta, start on
// the target. A cancel before the start restarts the instance on the
// source.
func (m *move) offlineSwitch(delta int64) error {
	cfg := m.d.cfg
	m.emit(events.PhaseSwitch, 0, "stopping "+m.op.Instance+" on "+m.op.From)
	if err := cfg.Clock.Sleep(m.ctx, cfg.StopTime); err != nil {
		return m.rollback(events.PhaseSwitch, fmt.Errorf("restarted on %s: %w", m.op.From, err))
	}
	m.downtime += cfg.StopTime
	m.total += delta
	m.syncs++
	begin := cfg.Clock.Now()
	if _, err := m.transfer(m.ctx, events.PhaseSwitch, "final delta to "+m.op.To, delta, false, false); err != nil {
		return err
	}
	if err := m.checkpoint(events.PhaseSwitch, true); err != nil {
		return err
	}
	m.downtime += cfg.Clock.Now().Sub(begin)
	return m.start()
}

// failover stops the instance on its primary and starts it on the target.
// It copies nothing, so progress counts its two steps.
func (m *move) failover(place) error {
	if !m.mirrored() && !m.shared() {
		return executor.Fatalf("sim: failover needs mirrored or shared storage; %s has %s", m.op.Instance, m.op.Storage)
	}
	cfg := m.d.cfg
	m.total = 2
	m.emit(events.PhaseBegin, 0, fmt.Sprintf("failing %s over from %s to %s", m.op.Instance, m.op.From, m.op.To))
	if err := m.checkpoint(events.PhaseSwitch, true); err != nil {
		return err
	}
	if m.running() {
		if err := cfg.Clock.Sleep(m.ctx, cfg.StopTime); err != nil {
			return m.rollback(events.PhaseSwitch, err)
		}
		m.downtime += cfg.StopTime
	}
	m.cur = 1
	m.emit(events.PhaseSwitch, 0, "stopped on "+m.op.From)
	if err := m.ctx.Err(); err != nil {
		return m.rollback(events.PhaseSwitch, fmt.Errorf("restarted on %s: %w", m.op.From, err))
	}
	return m.start()
}

// start starts the instance on the target: the point of no return.
func (m *move) start() error {
	cfg := m.d.cfg
	if m.running() {
		_ = cfg.Clock.Sleep(context.WithoutCancel(m.ctx), cfg.StartTime)
		m.downtime += cfg.StartTime
	}
	m.cur = m.total
	m.emit(events.PhaseSwitch, 0, "started on "+m.op.To)
	return nil
}

// handover finishes a move that needs no start of its own.
func (m *move) handover(_ place, msg string) error {
	if err := m.checkpoint(events.PhaseSwitch, true); err != nil {
		return err
	}
	m.total = max(m.total, 1) // a move that sent nothing still has its one step
	m.cur = m.total
	m.emit(events.PhaseSwitch, 0, msg)
	return nil
}
