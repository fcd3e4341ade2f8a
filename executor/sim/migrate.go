package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
)

var _ executor.Migrator = (*Driver)(nil)

// simMig is what the simulator remembers of one per-instance migration:
// when each sync's snapshot was taken (the next incremental sends what the
// instance dirtied since), and where the instance runs.
type simMig struct {
	prior      events.RunState
	snapAt     map[int]time.Time // sync pass → snapshot time (simulated)
	switched   bool
	switchedAt time.Time
	done       map[int]executor.PhaseResult // seq → result, for a phase run again
}

func (d *Driver) mig(mp executor.MigrationPhase) *simMig {
	sm, ok := d.migs[mp.Migration]
	if !ok {
		sm = &simMig{prior: mp.RunState, snapAt: map[int]time.Time{}, done: map[int]executor.PhaseResult{}}
		d.migs[mp.Migration] = sm
	}
	return sm
}

// phaseRun is one call of Phase.
type phaseRun struct {
	d      *Driver
	ctx    context.Context
	mp     executor.MigrationPhase
	sm     *simMig
	report func(executor.Progress)
	cur    int64
	total  int64
	struck bool
}

// Phase runs one RFD 34 phase in simulated time: begin reserves the
// target; sync N sends the whole disk (N = 1) or what the instance dirtied
// since sync N-1's snapshot, at the bandwidth capped by the migration's
// current rate; switch stops the instance, sends the final delta and
// starts it on the target (its downtime); abort and rollback put it back
// on the source in its prior run state (rollback sends what changed since
// the switch); finalize drops the source copy. A phase already done for
// this seq returns its result again.
func (d *Driver) Phase(ctx context.Context, mp executor.MigrationPhase, report func(executor.Progress)) (executor.PhaseResult, error) {
	d.mu.Lock()
	sm := d.mig(mp)
	if res, ok := sm.done[mp.Seq]; ok {
		d.mu.Unlock()
		return res, nil
	}
	if _, ok := d.world[mp.Instance]; !ok {
		d.world[mp.Instance] = &place{primary: mp.Source}
	}
	d.mu.Unlock()
	r := &phaseRun{d: d, ctx: ctx, mp: mp, sm: sm, report: report}
	var res executor.PhaseResult
	var err error
	switch mp.Phase {
	case events.PhaseBegin:
		res, err = r.begin()
	case events.PhaseSync:
		res, err = r.sync()
	case events.PhaseSwitch:
		res, err = r.switchOver()
	case "abort":
		res, err = r.abort()
	case "rollback":
		res, err = r.rollback()
	case "finalize":
		res, err = r.finalize()
	default:
		err = executor.Fatalf("sim: unknown migration phase %q", mp.Phase)
	}
	if err != nil {
		return executor.PhaseResult{}, err
	}
	d.mu.Lock()
	sm.done[mp.Seq] = res
	d.mu.Unlock()
	return res, nil
}

func (r *phaseRun) running() bool { return r.sm.prior == events.RunRunning }

func (r *phaseRun) diskBytes() int64 {
	var n int64
	for _, x := range r.mp.Size.DisksMiB {
		n += x
	}
	return n * r.d.cfg.DiskScale
}

// rate is the send rate now: the bandwidth, capped by the migration's
// current limit (settings change it while a phase runs).
func (r *phaseRun) rate() int64 {
	bw := r.d.cfg.Bandwidth
	limit := r.mp.SendBytesPerSecond
	if r.mp.CurrentRate != nil {
		limit = r.mp.CurrentRate()
	}
	if limit > 0 {
		bw = min(bw, limit)
	}
	return bw
}

func (r *phaseRun) emit(msg string, rate int64) {
	p := executor.Progress{Phase: r.mp.Phase, Current: r.cur, Total: r.total, BytesPerSecond: rate, Message: msg}
	if rate > 0 {
		p.ETA = time.Duration(float64(r.total-r.cur) / float64(rate) * float64(time.Second))
	}
	r.report(p)
}

// strike fails the call where a fault armed for the instance says so, once
// per call, halfway through its transfer.
func (r *phaseRun) strike() error {
	if r.struck {
		return nil
	}
	r.struck = true
	phase := r.mp.Phase
	if phase != events.PhaseBegin && phase != events.PhaseSync && phase != events.PhaseSwitch {
		return nil
	}
	op := executor.Op{Request: r.mp.Migration, Kind: events.OpInstanceMigrate, Instance: r.mp.Instance,
		From: r.mp.Source, To: r.mp.Target}
	f := r.d.strike(op, phase, true)
	if f == nil {
		return nil
	}
	where := fmt.Sprintf("%s phase of migration %s of %s, %s of %s sent", phase, r.mp.Migration, r.mp.Instance,
		events.FormatBytes(r.cur), events.FormatBytes(r.total))
	if f.Kind == FaultTransient {
		return executor.Transient(fmt.Errorf("%w: connection to %s lost during %s", ErrInjected, r.mp.Target, where))
	}
	return executor.Fatal(fmt.Errorf("%w: %s refused the data during %s; the source is as it was", ErrInjected, r.mp.Target, where))
}

// transfer sends n bytes in steps of simulated time, resuming where an
// earlier attempt of the same sync broke off (resume key).
func (r *phaseRun) transfer(label string, n int64, resume string) (int64, error) {
	cfg := r.d.cfg
	var done int64
	if resume != "" {
		r.d.mu.Lock()
		done = min(r.d.resume[resume], n)
		r.d.mu.Unlock()
		if done > 0 {
			label = fmt.Sprintf("%s (resuming at %s)", label, events.FormatBytes(done))
		}
	}
	r.cur += done
	r.emit(label, r.rate())
	sent := int64(0)
	for done < n {
		rate := r.rate()
		chunk, dt := max(int64(float64(rate)*cfg.Step.Seconds()), 1), cfg.Step
		if chunk >= n-done {
			chunk = n - done
			dt = time.Duration(float64(chunk) / float64(rate) * float64(time.Second))
		}
		if err := cfg.Clock.Sleep(r.ctx, dt); err != nil {
			return sent, fmt.Errorf("%w: sim: %s of migration %s stopped: %v", executor.ErrCanceled, r.mp.Phase, r.mp.Migration, err)
		}
		done += chunk
		sent += chunk
		r.cur += chunk
		if resume != "" {
			r.d.mu.Lock()
			r.d.resume[resume] = done
			r.d.mu.Unlock()
		}
		if done*2 >= n {
			if err := r.strike(); err != nil {
				return sent, err
			}
		}
		r.emit(label, rate)
	}
	return sent, nil
}

func (r *phaseRun) begin() (executor.PhaseResult, error) {
	r.total = 1
	r.emit(fmt.Sprintf("reserving %s for %s (%s of disk)", r.mp.Target, r.mp.Instance, events.FormatBytes(r.diskBytes())), 0)
	if err := r.d.cfg.Clock.Sleep(r.ctx, r.d.cfg.Step); err != nil {
		return executor.PhaseResult{}, fmt.Errorf("%w: sim: begin stopped: %v", executor.ErrCanceled, err)
	}
	if err := r.strike(); err != nil {
		return executor.PhaseResult{}, err
	}
	r.cur = 1
	r.emit(fmt.Sprintf("reserved %s on %s; prior run state %s", r.mp.Instance, r.mp.Target, r.sm.prior), 0)
	return executor.PhaseResult{Message: fmt.Sprintf("begin: %s reserved on %s", r.mp.Instance, r.mp.Target)}, nil
}

// dirtiedSince is what the instance dirtied from t to now.
func (r *phaseRun) dirtiedSince(t time.Time) int64 {
	if !r.running() || t.IsZero() {
		return 0
	}
	n := int64(float64(r.d.cfg.DirtyRate) * r.d.cfg.Clock.Now().Sub(t).Seconds())
	return min(max(n, 0), r.diskBytes())
}

func (r *phaseRun) sync() (executor.PhaseResult, error) {
	n := max(r.mp.Sync, 1)
	r.d.mu.Lock()
	at, ok := r.sm.snapAt[n]
	if !ok {
		at = r.d.cfg.Clock.Now()
		r.sm.snapAt[n] = at // @migrate-snap-N
	}
	prev := r.sm.snapAt[n-1]
	r.d.mu.Unlock()
	size, what := r.diskBytes(), "full send"
	if n > 1 {
		size, what = 0, fmt.Sprintf("incremental %d", n)
		if r.running() && !prev.IsZero() {
			size = min(int64(float64(r.d.cfg.DirtyRate)*at.Sub(prev).Seconds()), r.diskBytes())
		}
	}
	r.total = max(size, 1)
	key := fmt.Sprintf("%s/sync/%d", r.mp.Migration, n)
	if _, err := r.transfer(fmt.Sprintf("%s of %s to %s", what, r.mp.Instance, r.mp.Target), size, key); err != nil {
		return executor.PhaseResult{}, err
	}
	r.cur = r.total
	r.emit(fmt.Sprintf("sync %d done: %s", n, events.FormatBytes(size)), 0)
	r.d.mu.Lock()
	delete(r.d.resume, key)
	r.d.mu.Unlock()
	return executor.PhaseResult{Bytes: size, Message: fmt.Sprintf("sync %d of %s: %s sent", n, r.mp.Instance, events.FormatBytes(size))}, nil
}

func (r *phaseRun) lastSnap() time.Time {
	r.d.mu.Lock()
	defer r.d.mu.Unlock()
	var last time.Time
	for _, t := range r.sm.snapAt {
		if t.After(last) {
			last = t
		}
	}
	return last
}

func (r *phaseRun) switchOver() (executor.PhaseResult, error) {
	cfg := r.d.cfg
	begin := cfg.Clock.Now()
	if r.running() {
		r.emit("stopping "+r.mp.Instance+" on "+r.mp.Source, 0)
		if err := cfg.Clock.Sleep(r.ctx, cfg.StopTime); err != nil {
			return executor.PhaseResult{}, fmt.Errorf("%w: sim: switch stopped; %s restarted on %s: %v",
				executor.ErrCanceled, r.mp.Instance, r.mp.Source, err)
		}
	}
	delta := r.dirtiedSince(r.lastSnap())
	r.total = max(delta, 1)
	if _, err := r.transfer("final delta to "+r.mp.Target, delta, ""); err != nil {
		return executor.PhaseResult{}, err // cancelled or failed: it restarts on the source
	}
	if err := r.strike(); err != nil {
		return executor.PhaseResult{}, err
	}
	// Point of no return: NICs move and the instance starts on the target.
	if r.running() {
		_ = cfg.Clock.Sleep(context.WithoutCancel(r.ctx), cfg.StartTime)
	}
	down := time.Duration(0)
	if r.running() {
		down = cfg.Clock.Now().Sub(begin)
	}
	r.d.mu.Lock()
	r.sm.switched, r.sm.switchedAt = true, cfg.Clock.Now()
	r.d.world[r.mp.Instance] = &place{primary: r.mp.Target}
	r.d.mu.Unlock()
	r.cur = r.total
	r.emit(fmt.Sprintf("NICs moved; %s started on %s", r.mp.Instance, r.mp.Target), 0)
	overhead := time.Duration(0)
	if down > 0 {
		overhead = cfg.StopTime + cfg.StartTime
	}
	return executor.PhaseResult{Bytes: delta, Downtime: down, Overhead: overhead,
		Message: fmt.Sprintf("switched %s to %s: final delta %s, downtime %s", r.mp.Instance, r.mp.Target,
			events.FormatBytes(delta), down.Round(time.Millisecond))}, nil
}

func (r *phaseRun) abort() (executor.PhaseResult, error) {
	r.total = 1
	r.emit(fmt.Sprintf("dropping the reservation on %s; %s back to %s on %s", r.mp.Target, r.mp.Instance, r.sm.prior, r.mp.Source), 0)
	_ = r.d.cfg.Clock.Sleep(context.WithoutCancel(r.ctx), r.d.cfg.Step)
	r.d.mu.Lock()
	r.d.world[r.mp.Instance] = &place{primary: r.mp.Source}
	r.d.mu.Unlock()
	r.cur = 1
	msg := fmt.Sprintf("aborted: %s %s on %s with its NICs; target copy on %s dropped", r.mp.Instance, r.sm.prior, r.mp.Source, r.mp.Target)
	r.emit(msg, 0)
	return executor.PhaseResult{Message: msg}, nil
}

func (r *phaseRun) rollback() (executor.PhaseResult, error) {
	cfg := r.d.cfg
	r.d.mu.Lock()
	since := r.sm.switchedAt
	r.d.mu.Unlock()
	delta := r.dirtiedSince(since)
	r.total = max(delta, 1)
	begin := cfg.Clock.Now()
	if r.running() {
		_ = cfg.Clock.Sleep(r.ctx, cfg.StopTime)
	}
	if _, err := r.transfer("changes since the switch back to "+r.mp.Source, delta, ""); err != nil {
		return executor.PhaseResult{}, err
	}
	if r.running() {
		_ = cfg.Clock.Sleep(context.WithoutCancel(r.ctx), cfg.StartTime)
	}
	r.d.mu.Lock()
	r.sm.switched = false
	r.d.world[r.mp.Instance] = &place{primary: r.mp.Source}
	r.d.mu.Unlock()
	r.cur = r.total
	msg := fmt.Sprintf("rolled back %s to %s: %s sent back", r.mp.Instance, r.mp.Source, events.FormatBytes(delta))
	r.emit(msg, 0)
	return executor.PhaseResult{Bytes: delta, Downtime: cfg.Clock.Now().Sub(begin), Message: msg}, nil
}

func (r *phaseRun) finalize() (executor.PhaseResult, error) {
	r.total, r.cur = 1, 1
	msg := fmt.Sprintf("finalized: source copy of %s on %s and the migration snapshots dropped", r.mp.Instance, r.mp.Source)
	r.emit(msg, 0)
	return executor.PhaseResult{Message: msg}, nil
}

// Estimate is the model's own arithmetic: the full send at the current
// rate, incrementals shrinking by DirtyRate/rate until under SwitchBelow,
// then the switch's stop, final delta and start.
func (d *Driver) Estimate(_ context.Context, mp executor.MigrationPhase) (executor.Estimate, error) {
	r := &phaseRun{d: d, mp: mp, sm: &simMig{prior: mp.RunState}}
	rate := float64(r.rate())
	disk := r.diskBytes()
	bytes, secs := float64(disk), float64(disk)/rate
	delta := 0.0
	if mp.RunState == events.RunRunning {
		delta = float64(d.cfg.DirtyRate) * secs
		for i := 1; i < d.cfg.MaxSyncs && delta >= float64(d.cfg.SwitchBelow) && delta < bytes; i++ {
			bytes += delta
			t := delta / rate
			secs += t
			delta = float64(d.cfg.DirtyRate) * t
		}
	}
	down := delta / rate
	if mp.RunState == events.RunRunning {
		down += d.cfg.StopTime.Seconds() + d.cfg.StartTime.Seconds()
	}
	return executor.Estimate{
		TotalSeconds: secs + down, DowntimeSeconds: down, Bytes: int64(bytes + delta),
		How: fmt.Sprintf("simulated: %s of disk at %s/s, dirtied at %s/s while running; stop %s, start %s",
			events.FormatBytes(disk), events.FormatBytes(int64(rate)), events.FormatBytes(d.cfg.DirtyRate), d.cfg.StopTime, d.cfg.StartTime),
	}, nil
}
