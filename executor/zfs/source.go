package zfs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/transfer"
)

// move is one Run on the source: the peer it talks to and what it has
// reported so far (progress is cumulative over the call).
type move struct {
	d      *Driver
	op     executor.Op
	ds     string
	report func(executor.Progress)
	lim    *transfer.Limiter
	addr   string
	rep    MoveReport

	// current and total are the progress counters: bytes, except that a
	// finished send counts at least its estimate (see sendWith); sent is
	// what went over the wire.
	current, total, sent int64
	phase                string
	verified             int // the snapshot verified ahead of the switch; 0: none
	// delta is what the streams sent since verified (delta.go); nil: none
	// followed.
	delta *delta
	// fellBack is why a live hand-over failed before this offline switch
	// (allow_failover); the end says so, as progress reports may be dropped.
	fellBack string
	before   []int // the migration snapshots held before this move
}

// Run is the source side of an opcode: see executor.Driver.
func (d *Driver) Run(ctx context.Context, op executor.Op, report func(executor.Progress)) (executor.Result, error) {
	if !supported(op.Storage) {
		return executor.Result{}, executor.Fatal(fmt.Errorf("%w: storage %q", ErrUnsupported, op.Storage))
	}
	if op.Kind == events.OpInstanceFailover && op.From != d.cfg.Node {
		// The primary is offline; the executor runs the failover here.
		return d.failoverLocal(ctx, op, report)
	}
	m := &move{d: d, op: op, ds: d.Dataset(op.Instance), report: report,
		lim: transfer.NewLimiter(cmp.Or(op.SendBytesPerSecond, d.cfg.SendBytesPerSecond)), phase: events.PhaseBegin,
		rep: MoveReport{Key: op.Key(), Kind: op.Kind, Instance: op.Instance, Mode: d.feat.Mode()}}
	res, err := m.run(ctx)
	m.rep.Err = err
	d.record(m.rep)
	return res, err
}

func (m *move) progress(msg string, bps int64, eta time.Duration) {
	m.total = max(m.total, m.current)
	m.report(executor.Progress{Phase: m.phase, Current: m.current, Total: m.total,
		BytesPerSecond: bps, ETA: eta, Message: msg})
}

func (m *move) run(ctx context.Context) (executor.Result, error) {
	op := m.op
	m.progress("connecting to the receiver on "+op.To+"; zfs mode: "+m.d.feat.Mode(), 0, 0)
	hello, err := m.request(ctx, kindHello, nil)
	if err != nil {
		return executor.Result{}, err
	}
	if hello["committed"] == op.Key() {
		// An earlier attempt finished before a crash hid its end.
		m.progress("the move was already committed on "+op.To, 0, 0)
		return executor.Result{Message: "already done: " + op.Key() + " committed on " + op.To}, nil
	}
	ok, err := exists(ctx, m.ds)
	if err != nil {
		return executor.Result{}, executor.Transient(err)
	}
	if !ok {
		return executor.Result{}, executor.Fatal(fmt.Errorf("%w: %s", ErrNotFound, m.ds))
	}
	// The snapshots already here are a replica's base (zfs-replicated):
	// they stay until the move commits, so that a failed move leaves the
	// existing replica able to continue incrementally.
	if m.before, err = snapNumbers(ctx, m.ds); err != nil {
		return executor.Result{}, executor.Transient(err)
	}
	// Marks of an earlier move in which this node was the target must
	// not travel with -R to the new target.
	clearProps(ctx, m.ds, propMigration, propCreated, propBase, propCommitted)
	in := m.d.instance(ctx, op.Instance)
	wasRunning, err := m.d.cfg.Runtime.Running(ctx, in)
	if err != nil {
		return executor.Result{}, executor.Transient(err)
	}

	defer m.d.forgetSums(op)
	res, err := m.sync(ctx, hello, op.Kind == events.OpInstanceMigrate)
	if err != nil {
		return res, m.fail(ctx, err, false, wasRunning)
	}
	stop := op.Kind != events.OpInstanceReplaceDisks
	if stop && wasRunning {
		if err := m.verifyAhead(ctx); err != nil {
			return res, m.fail(ctx, err, false, wasRunning)
		}
	}
	if lr, ok := m.d.cfg.Runtime.(LiveRuntime); ok && stop && wasRunning && op.Kind == events.OpInstanceMigrate &&
		op.Storage == events.StorageZFSLocal && op.Mode != events.ModeMigrateNonLive {
		if res, done, err := m.runLive(ctx, lr, res); done { // migrate_live.go
			return res, err
		}
	}
	// Switch: stop (migrate, failover), final delta, verify, commit.
	m.phase = events.PhaseSwitch
	var down time.Time
	if stop && wasRunning {
		m.progress("stopping "+op.Instance+" on "+op.From+" for the final delta", 0, 0)
		down = time.Now()
		if err := m.d.cfg.Runtime.Stop(ctx, in); err != nil {
			return res, m.fail(ctx, executor.Transient(err), false, wasRunning)
		}
		m.rep.StopTime = time.Since(down)
	}
	final, err := m.send(ctx, true)
	if err != nil {
		return res, m.fail(ctx, err, stop, wasRunning)
	}
	began := time.Now()
	sum, err := m.verify(ctx, final, m.verified)
	m.rep.ChecksumTime = time.Since(began)
	if err != nil {
		return res, m.fail(ctx, err, stop, wasRunning)
	}
	keep := ""
	if op.Storage == events.StorageZFSReplicated {
		keep = strconv.Itoa(final) // the base of the replica's next incremental
	}
	start := strconv.FormatBool(stop && wasRunning)
	if _, err := m.request(ctx, kindCommit, map[string]string{"keep": keep, "start": start}); err != nil {
		return res, m.fail(ctx, err, stop, wasRunning)
	}
	if !down.IsZero() {
		m.rep.Downtime = time.Since(down)
	}
	// Past the point of no return: the target runs the instance.
	if err := m.cleanupSource(context.WithoutCancel(ctx), keep); err != nil {
		m.d.log.Warn("source cleanup after the move failed; leftovers stay", "dataset", m.ds, "err", err)
	}
	m.progress(fmt.Sprintf("done: %s on %s, checksum %s", op.Instance, op.To, sum), 0, 0)
	res.Downtime, res.Bytes, res.Syncs = m.rep.Downtime, m.sent, len(m.rep.Syncs)
	res.Message = fmt.Sprintf("%s of %s to %s: %d syncs, %d bytes, final delta %d bytes, downtime %s, checksum %s (%s)",
		executor.ShortKind(op.Kind), op.Instance, op.To, res.Syncs, res.Bytes, m.rep.FinalDelta,
		m.rep.Downtime.Round(time.Millisecond), sum, m.d.feat.Mode())
	if m.fellBack != "" {
		res.Message += "; moved offline as allow_failover asks, after the hand-over failed: " + m.fellBack
	}
	return res, nil
}

// sync sends the first snapshot (full, or incremental from a snapshot both
// sides hold) and, when resync, incrementals until the rule says switch.
func (m *move) sync(ctx context.Context, hello map[string]string, resync bool) (executor.Result, error) {
	m.phase = events.PhaseSync
	if _, err := m.sendWith(ctx, false, hello, nil); err != nil {
		return executor.Result{}, err
	}
	if m.op.Kind == events.OpInstanceFailover {
		return executor.Result{}, nil
	}
	for {
		var incs []int64
		for _, s := range m.rep.Syncs {
			if s.Incremental {
				incs = append(incs, s.Bytes)
			}
		}
		if ok, why := m.d.cfg.Resync.decide(incs, len(m.rep.Syncs)); ok || !resync && len(incs) > 0 {
			if why == "" {
				why = "replica current"
			}
			m.progress("switching: "+why, 0, 0)
			return executor.Result{}, nil
		}
		if _, err := m.send(ctx, false); err != nil {
			return executor.Result{}, err
		}
	}
}

// send takes the next snapshot and sends it; final marks the switch's
// final delta.
func (m *move) send(ctx context.Context, final bool) (int, error) {
	return m.sendAsking(ctx, final, nil)
}

// sendAsking takes the next snapshot while the target answers hello, then
// sends it. The hello waits on the target (its listener, a handshake, its
// own zfs commands) and the snapshot on a transaction group here; neither
// needs the other, and on a final delta both are downtime. prepare, when
// set, runs beside both and ends before the send. A target that has
// committed the move takes nothing more; the snapshot then stays, for a
// later prune.
func (m *move) sendAsking(ctx context.Context, final bool, prepare func(context.Context)) (int, error) {
	type taken struct {
		local []int
		next  int
	}
	// prepare runs beside the snapshot too: -R sends the file system's
	// properties as they are when the send starts, not as they were at
	// the snapshot (so on zfs-fuse), and each waits on a transaction
	// group, which they then mostly share.
	var prepared sync.WaitGroup
	if prepare != nil {
		prepared.Go(func() { prepare(ctx) })
	}
	snap := beside(func() (taken, error) {
		local, next, err := m.takeSnapshot(ctx, nil)
		return taken{local, next}, err
	})
	hello, err := m.request(ctx, kindHello, nil)
	t, terr := snap()
	prepared.Wait()
	if err != nil { // first: a refusal says whether to try again
		return 0, err
	}
	if terr != nil {
		return 0, terr
	}
	if hello["committed"] == m.op.Key() {
		return 0, executor.Fatal(fmt.Errorf("%w: the switch of %s has committed; nothing to sync", ErrUnsupported, m.op.Request))
	}
	return m.sendSnapshot(ctx, final, hello, t.local, t.next)
}

// sendWith takes the next snapshot and sends it, hello already asked,
// after local, the move's snapshots as listed before (nil: list them
// now). A final delta's are listed before the stop: only this move makes
// its snapshots, and the list is a round trip to zfs-fuse (about 15 ms
// here) that the downtime then does not pay.
func (m *move) sendWith(ctx context.Context, final bool, hello map[string]string, local []int) (int, error) {
	local, next, err := m.takeSnapshot(ctx, local)
	if err != nil {
		return 0, err
	}
	return m.sendSnapshot(ctx, final, hello, local, next)
}

// takeSnapshot snapshots the dataset as the next migration snapshot after
// local, the move's snapshots as listed before (nil: list them now): it
// returns them and the new one's number.
func (m *move) takeSnapshot(ctx context.Context, local []int) ([]int, int, error) {
	if local == nil {
		var err error
		if local, err = m.listSnapshots(ctx); err != nil {
			return nil, 0, err
		}
	}
	next := 1
	if len(local) > 0 {
		next = local[len(local)-1] + 1
	}
	if err := snapshot(ctx, m.ds+"@"+snapName(next)); err != nil {
		return nil, 0, executor.Transient(err)
	}
	return local, next, nil
}

// listSnapshots lists the move's snapshots on the source, never nil.
func (m *move) listSnapshots(ctx context.Context) ([]int, error) {
	local, err := snapNumbers(ctx, m.ds)
	if err != nil {
		return nil, executor.Transient(err)
	}
	if local == nil {
		local = []int{}
	}
	return local, nil
}

// sendSnapshot sends snapshot next from the newest one of local that the
// target holds too (by its hello), or whole.
func (m *move) sendSnapshot(ctx context.Context, final bool, hello map[string]string, local []int, next int) (int, error) {
	base := commonNewest(local, hello["snaps"])
	est := m.estimate(ctx, base, next)
	args := []string{}
	if m.d.feat.Replicate {
		args = append(args, "-R")
	}
	kind := "full send"
	if base > 0 {
		args = append(args, "-I", m.ds+"@"+snapName(base))
		kind = fmt.Sprintf("incremental send from %s", snapName(base))
	}
	args = append(args, m.ds+"@"+snapName(next))
	if tok := hello["token"]; tok != "" && m.d.feat.Resumable {
		args, kind = []string{"-t", tok}, "resumed send from the receive token"
	}
	what := fmt.Sprintf("sync %d: %s of %s@%s (estimated %d bytes; %s)",
		len(m.rep.Syncs)+1, kind, m.ds, snapName(next), est, m.d.feat.Mode())
	if final {
		what = "final delta: " + what
	}
	m.total += est
	m.progress(what, 0, 0)
	began, start := time.Now(), m.current
	sent, err := m.stream(ctx, args, map[string]string{"snap": strconv.Itoa(next),
		"base": strconv.Itoa(base), "estimate": strconv.FormatInt(est, 10), "final": strconv.FormatBool(final)}, what)
	if err != nil {
		return 0, err
	}
	m.sent += sent
	// Total never shrinks (executor.Driver), yet the estimate is only an
	// estimate: on old ZFS, from referenced and used, it is often larger
	// than the stream. A finished send therefore counts at least its
	// estimate, so that Current ends at Total; it used to set Total to
	// Current at the end instead, which made Total go backwards.
	m.current = max(m.current, start+est)
	m.rep.Syncs = append(m.rep.Syncs, SyncReport{Snapshot: next, Incremental: base > 0, Final: final,
		Estimate: est, Bytes: sent, Duration: time.Since(began)})
	if final {
		m.rep.FinalDelta = sent
	}
	// The target holds next; older snapshots of this move are not needed
	// on either side. After the final delta they go once the move has
	// committed (cleanupSource, a migration's switch), out of the downtime.
	if final {
		return next, nil
	}
	if err := m.prune(ctx, local); err != nil {
		return next, executor.Transient(err)
	}
	return next, nil
}

// prune destroys the snapshots numbered ns but those held before the
// move.
func (m *move) prune(ctx context.Context, ns []int) error {
	for _, n := range ns {
		if slices.Contains(m.before, n) {
			continue
		}
		if err := m.dropSnapshot(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// stream runs `zfs send args` into a recv stream to the target and
// reports progress while it flows.
func (m *move) stream(ctx context.Context, args []string, meta map[string]string, what string) (int64, error) {
	if meta["base"] == "0" {
		meta["base"] = ""
	}
	snd, err := m.dial(ctx, transfer.Header{Key: m.op.Key(), Kind: kindRecv, Meta: meta})
	if err != nil {
		return 0, err
	}
	defer snd.Close()
	var out io.Writer = snd
	if m.delta != nil && m.delta.known {
		if meta["base"] == "" {
			m.delta.known = false // a full send: everything may have changed
		} else {
			out = io.MultiWriter(snd, &streamReader{d: m.delta, ds: m.ds})
		}
	}
	start := m.current
	stopReport := make(chan struct{})
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		t := time.NewTicker(m.d.cfg.ReportInterval)
		defer t.Stop()
		for {
			select {
			case <-stopReport:
				return
			case <-t.C:
				st := snd.Meter().Stats()
				m.current = start + st.Bytes
				m.progress(what, st.BytesPerSecond, st.ETA(m.total-start))
			}
		}
	}()
	err = send(ctx, out, !m.d.feat.SendStopsCleanly, args...)
	close(stopReport)
	<-reported
	st := snd.Meter().Stats()
	m.current = start + st.Bytes
	if err != nil {
		return st.Bytes, classify(ctx, err)
	}
	r, err := snd.Finish()
	if err != nil {
		return st.Bytes, classify(ctx, err)
	}
	if err := r.Err(); err != nil {
		return st.Bytes, executor.Transient(err)
	}
	m.progress(fmt.Sprintf("%s: sent %d bytes in %s", what, st.Bytes, st.Elapsed.Round(time.Millisecond)),
		st.Average, 0)
	return st.Bytes, nil
}

// estimate is the size of the send from base to next. Old ZFS has neither
// `send -nP` nor `written@`: a full send is about the snapshot's
// referenced bytes, an incremental about the growth of referenced plus
// what base alone still holds (blocks overwritten since). The progress
// total grows when the real stream is larger.
func (m *move) estimate(ctx context.Context, base, next int) int64 {
	to := m.ds + "@" + snapName(next)
	if base == 0 {
		ref, _ := propInt(ctx, to, "referenced")
		return ref
	}
	if m.d.feat.Written {
		if w, err := propInt(ctx, to, "written@"+snapName(base)); err == nil {
			return w
		}
	}
	// Both snapshots in one command: the final delta's estimate is in
	// the switch's downtime, and each command waits on the daemon.
	from := m.ds + "@" + snapName(base)
	v, _ := intProps(ctx, []string{to, from}, "referenced", "used")
	return max(v[to]["referenced"]-v[from]["referenced"], 0) + v[from]["used"]
}

// verifyAhead checksums the last synced snapshot on both nodes while the
// instance still runs, then syncs what it wrote meanwhile, so that the
// switch's checksum re-reads only the files changed since (checksum.go).
func (m *move) verifyAhead(ctx context.Context) error {
	return m.verifyAheadOf(ctx, m.rep.Syncs[len(m.rep.Syncs)-1].Snapshot)
}

// verifyAheadOf is verifyAhead from snapshot last, which both sides hold
// (a migration's switch phase starts from the last sync's snapshot).
func (m *move) verifyAheadOf(ctx context.Context, last int) error {
	began := time.Now()
	if _, err := m.verify(ctx, last, 0); err != nil {
		return err
	}
	m.rep.AheadTime = time.Since(began)
	m.verifiedAt(ctx, last)
	return m.catchUp(ctx, m.lastIncremental())
}

// maxCatchUps bounds the sends after the checksum ahead.
const maxCatchUps = 4

// catchUp sends what the instance wrote during the checksum ahead, and
// sends again while each send shrinks, until one is back within 10% of
// level (the last incremental before the checksum) or under the rule's
// MaxBytes.
// On a busy machine the checksum takes seconds and the first catch-up is
// large; switching right after it would make the final delta, and so
// the downtime, what the instance wrote during that large send.
func (m *move) catchUp(ctx context.Context, level int64) error {
	prev := int64(-1)
	for range maxCatchUps {
		if _, err := m.send(ctx, false); err != nil {
			return err
		}
		n := m.rep.Syncs[len(m.rep.Syncs)-1].Bytes
		if n <= level+level/10 || n < m.d.cfg.Resync.MaxBytes || prev >= 0 && float64(n) > 0.9*float64(prev) {
			return nil
		}
		prev = n
	}
	return nil
}

// lastIncremental is the size of the last incremental sent, 0 if none.
func (m *move) lastIncremental() int64 {
	for i := len(m.rep.Syncs) - 1; i >= 0; i-- {
		if m.rep.Syncs[i].Incremental {
			return m.rep.Syncs[i].Bytes
		}
	}
	return 0
}

// verifiedAt makes snapshot n the verified one, from which the streams
// sent next are followed (delta.go).
func (m *move) verifiedAt(ctx context.Context, n int) {
	m.verified = n
	m.delta = newDelta()
	txg, err := propInt(ctx, m.ds+"@"+snapName(n), "createtxg")
	m.delta.since, m.delta.known = uint64(txg), err == nil && txg > 0
}

// verify compares the content sums of snapshot n on both sides; with
// prev > 0 each side re-reads only the files changed since it verified
// snapshot prev.
func (m *move) verify(ctx context.Context, n, prev int) (string, error) {
	what := "verifying: content checksum of " + snapName(n) + " on both nodes"
	if prev > 0 {
		what += ", re-reading the files changed since " + snapName(prev)
	} else if m.phase == events.PhaseSync {
		what += " ahead of the switch, while " + m.op.Instance + " runs"
	}
	var dl *delta // the blocks sent since prev, which both sides re-read
	if prev > 0 && prev == m.verified {
		dl = m.delta
	}
	m.progress(what, 0, 0)
	local := beside(func() (treeSum, error) { return m.d.contentSum(ctx, m.op, n, prev, dl, nil) })
	remote, rerr := m.request(ctx, kindChecksum, map[string]string{"snap": strconv.Itoa(n), "prev": strconv.Itoa(prev),
		"delta": dl.encode()})
	ts, lerr := local()
	if lerr != nil {
		return "", executor.Transient(lerr)
	}
	m.rep.Checksum = ts.Sum
	if rerr != nil {
		return "", rerr
	}
	if remote["sum"] != ts.Sum && prev > 0 {
		// A side re-read only what its stamps or the delta called
		// changed; zfs-fuse can show a file's attributes from before a
		// receive, so the whole content decides before a mismatch fails
		// the move (more downtime, never a false alarm).
		m.d.log.Warn("checksums differ after a partial re-read; comparing the whole content", "instance", m.op.Instance,
			"snapshot", snapName(n), "differing", ts.sumDiff(remote["blocks"]))
		return m.verify(ctx, n, 0)
	}
	if remote["sum"] != ts.Sum {
		return "", executor.Fatal(fmt.Errorf("%w: %s on %s, %s on %s; %s", ErrChecksum, ts.Sum, m.op.From, remote["sum"], m.op.To,
			ts.sumDiff(remote["blocks"])))
	}
	if m.phase == events.PhaseSwitch {
		m.rep.ChecksumRead, m.rep.ChecksumReused = ts.Read, ts.Reused
	}
	msg := fmt.Sprintf("checksum of %s equal on both nodes: %d bytes read", snapName(n), ts.Read)
	if prev > 0 {
		msg += fmt.Sprintf(", %d bytes in files unchanged since %s", ts.Reused, snapName(prev))
	}
	m.progress(msg, 0, 0)
	return ts.Sum, nil
}

// fail rolls the source back after err: the instance restarts where it
// was if the move stopped it, and on a fatal fault (or a cancel) the
// target is told to undo the move and the migration snapshots go. A
// transient fault keeps both sides' snapshots, so the next attempt
// continues from the last one the target holds.
func (m *move) fail(ctx context.Context, err error, stopped, wasRunning bool) error {
	bg := context.WithoutCancel(ctx)
	if stopped && wasRunning {
		if serr := m.d.cfg.Runtime.Start(bg, m.d.instance(bg, m.op.Instance)); serr != nil {
			err = errors.Join(err, fmt.Errorf("restarting the source: %w", serr))
		}
	}
	if executor.IsTransient(err) && ctx.Err() == nil {
		return err
	}
	actx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	if _, aerr := m.request(actx, kindAbort, map[string]string{"why": err.Error()}); aerr != nil {
		m.d.log.Warn("could not tell the target to abort; it rolls back when the opcode ends", "err", aerr)
	}
	if cerr := m.cleanupFailed(bg); cerr != nil {
		m.d.log.Warn("source cleanup failed", "dataset", m.ds, "err", cerr)
	}
	if ctx.Err() != nil && !errors.Is(err, executor.ErrCanceled) {
		err = fmt.Errorf("%w: %w", executor.ErrCanceled, err)
	}
	if !executor.IsTransient(err) && !errors.Is(err, executor.ErrFatal) && !errors.Is(err, executor.ErrCanceled) {
		err = executor.Fatal(err)
	}
	return err
}

// cleanupFailed ends a failed move on the source: the snapshots it took
// go; the dataset and the snapshots held before it (a replica's base)
// stay. It never destroys the dataset: a move that failed may have failed
// before the target committed.
func (m *move) cleanupFailed(ctx context.Context) error {
	ns, err := snapNumbers(ctx, m.ds)
	if err != nil {
		return err
	}
	return m.prune(ctx, ns)
}

// cleanupSource ends a committed move on the source: a zfs-local instance that moved
// leaves no dataset behind; otherwise only the kept snapshot stays.
func (m *move) cleanupSource(ctx context.Context, keep string) error {
	_, final := m.rep.FinalSync()
	if keep == "" && final && m.rep.Checksum != "" && m.op.Storage == events.StorageZFSLocal &&
		m.op.Kind != events.OpInstanceReplaceDisks {
		return destroy(ctx, m.ds)
	}
	k, _ := strconv.Atoi(keep)
	return m.dropSnapshots(ctx, k)
}

// commonNewest is the newest snapshot number in local that the target
// also lists (comma-separated); 0 when none.
func commonNewest(local []int, remote string) int {
	have := map[int]bool{}
	for _, s := range strings.Split(remote, ",") {
		if n, err := strconv.Atoi(s); err == nil {
			have[n] = true
		}
	}
	for i := len(local) - 1; i >= 0; i-- {
		if have[local[i]] {
			return local[i]
		}
	}
	return 0
}

func classify(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", executor.ErrCanceled, err)
	}
	return executor.Transient(err)
}

// dial opens a stream to the receiver, waiting for its announcement and
// retrying while it (re)starts, up to ReceiverWait.
func (m *move) dial(ctx context.Context, h transfer.Header) (*transfer.Sender, error) {
	deadline := time.Now().Add(m.d.cfg.ReceiverWait)
	var last error
	for {
		addr, err := m.await(ctx, deadline)
		if err != nil {
			return nil, errors.Join(err, last)
		}
		s, err := transfer.Dial(ctx, addr, h, m.lim)
		if err == nil {
			return s, nil
		}
		if errors.Is(err, transfer.ErrPeer) {
			// The listener is not the target node (another node's or
			// another CA's certificate, or no TLS): a retry would meet
			// the same impostor, so the move fails now, untouched.
			return nil, executor.Fatal(err)
		}
		last = err
		if ctx.Err() != nil {
			return nil, classify(ctx, err)
		}
		if time.Now().After(deadline) {
			return nil, executor.Transient(fmt.Errorf("%w: %v", ErrNoReceiver, err))
		}
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, classify(ctx, ctx.Err())
		}
	}
}

func (m *move) await(ctx context.Context, deadline time.Time) (string, error) {
	if m.op.AwaitReceiver == nil {
		return "", executor.Fatal(fmt.Errorf("%w: the executor gave no AwaitReceiver", ErrNoReceiver))
	}
	actx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	addr, err := m.op.AwaitReceiver(actx)
	if err != nil {
		if ctx.Err() != nil {
			return "", classify(ctx, err)
		}
		return "", executor.Transient(fmt.Errorf("%w: %v", ErrNoReceiver, err))
	}
	return addr, nil
}

// request sends a body-less stream and returns the reply's meta.
func (m *move) request(ctx context.Context, kind string, meta map[string]string) (map[string]string, error) {
	s, err := m.dial(ctx, transfer.Header{Key: m.op.Key(), Kind: kind, Meta: meta})
	if err != nil {
		return nil, err
	}
	r, err := s.Finish()
	if err != nil {
		return nil, classify(ctx, err)
	}
	if err := r.Err(); err != nil {
		return r.Meta, executor.Transient(err)
	}
	return r.Meta, nil
}

var _ io.Writer = (*transfer.Sender)(nil)

// failoverLocal starts the instance here, on the target, from the replica
// as of its newest migration snapshot: the primary is offline and cannot
// hand over, so what it wrote after that snapshot is lost (Ganeti's
// failover with ignore_consistency).
func (d *Driver) failoverLocal(ctx context.Context, op executor.Op, report func(executor.Progress)) (executor.Result, error) {
	ds := d.Dataset(op.Instance)
	ok, err := exists(ctx, ds)
	if err != nil {
		return executor.Result{}, executor.Transient(err)
	}
	if !ok {
		return executor.Result{}, executor.Fatal(fmt.Errorf("%w: no replica %s on %s", ErrNotFound, ds, d.cfg.Node))
	}
	report(executor.Progress{Phase: events.PhaseSwitch, Message: "primary " + op.From + " offline: starting from the replica on " + d.cfg.Node})
	ns, err := snapNumbers(ctx, ds)
	if err != nil {
		return executor.Result{}, executor.Transient(err)
	}
	msg := "started from the replica as received"
	if len(ns) > 0 {
		if err := rollback(ctx, ds+"@"+snapName(ns[len(ns)-1])); err != nil {
			return executor.Result{}, executor.Transient(err)
		}
		msg = "started from the replica at " + snapName(ns[len(ns)-1])
	}
	if err := d.cfg.Runtime.Start(ctx, d.instance(ctx, op.Instance)); err != nil {
		return executor.Result{}, executor.Transient(err)
	}
	report(executor.Progress{Phase: events.PhaseSwitch, Current: 1, Total: 1, Message: msg})
	return executor.Result{Syncs: 0, Message: "failover of " + op.Instance + " to " + d.cfg.Node + ": " + msg}, nil
}
