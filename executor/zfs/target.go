package zfs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/transfer"
)

// Stream kinds between a source's Run and a target's Receive. Each is one
// transfer stream; the target answers each with a Reply.
const (
	kindHello    = "hello"    // what the target holds: snapshots, token, committed key
	kindRecv     = "recv"     // body: a zfs send stream of Meta snap (from Meta base)
	kindChecksum = "checksum" // the content sum of Meta snap
	kindCommit   = "commit"   // the move is done: keep Meta keep, start if Meta start
	kindAbort    = "abort"    // roll the target back to before the move
)

// User properties the target keeps on a dataset it receives into, so a
// restarted receiver (or an abort after a restart) knows what this move
// added: the move's key, whether the move created the dataset, and the
// newest migration snapshot it had before, all three in propMigration
// (recvState.mark). One property is one `zfs set`, so they are saved at
// once and a crash never leaves half of them; each `zfs set` waits for a
// transaction group, and the first receive's marks are saved before its
// reply, inside the sync. Executors before that kept created and base in
// propCreated and propBase, set before the key; stateOf still reads them.
const (
	propMigration = "drove:migration"
	propCreated   = "drove:created"
	propBase      = "drove:base"
	propCommitted = "drove:committed"
)

// recvState is what the target knows about the move it receives.
type recvState struct {
	key     string
	created bool
	base    int
	known   bool // the move has touched the dataset
}

func (d *Driver) loadState(ctx context.Context, ds, key string) recvState {
	ps, _ := props(ctx, ds, propMigration, propCreated, propBase)
	return stateOf(ps, key)
}

// stateOf is the move key's state as the dataset's marks ps say. A mark
// of the key that does not parse is not known: the receiver then keeps
// what the dataset holds rather than destroy what it cannot prove it made.
func stateOf(ps map[string]string, key string) recvState {
	st := recvState{key: key}
	v := ps[propMigration]
	if v == key { // an older executor's marks
		st.created = ps[propCreated] == "yes"
		st.base, _ = strconv.Atoi(ps[propBase])
		st.known = true
		return st
	}
	rest, ok := strings.CutPrefix(v, key+" ")
	f := strings.Fields(rest)
	if !ok || len(f) != 2 {
		return st
	}
	created, okC := strings.CutPrefix(f[0], "created=")
	base, okB := strings.CutPrefix(f[1], "base=")
	n, err := strconv.Atoi(base)
	if !okC || !okB || err != nil || n < 0 || (created != "yes" && created != "no") {
		return st
	}
	st.created, st.base, st.known = created == "yes", n, true
	return st
}

// mark is st as propMigration's value: "KEY created=yes|no base=N".
func (st recvState) mark() string {
	created := "no"
	if st.created {
		created = "yes"
	}
	return fmt.Sprintf("%s created=%s base=%d", st.key, created, st.base)
}

func (d *Driver) saveState(ctx context.Context, ds string, st recvState) error {
	return setProp(ctx, ds, propMigration, st.mark())
}

func (d *Driver) lockDataset(ds string) *sync.Mutex {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := d.recvLock[ds]
	if m == nil {
		m = &sync.Mutex{}
		d.recvLock[ds] = m
	}
	return m
}

// Receive is the target side of a move: it listens, announces, and serves
// the source's streams until the source commits (nil) or aborts, or ctx
// ends. A ctx cancelled as a requested cancellation (its cause wraps
// executor.ErrCanceled) rolls back what this move received; a ctx ended by
// shutdown keeps it, so the next receiver continues from the last
// received snapshot.
func (d *Driver) Receive(ctx context.Context, op executor.Op, listening func(addr string), report func(executor.Progress)) error {
	if _, ok := op.MigrationPhaseOf(); ok {
		return d.receiveMigration(ctx, op, listening, report) // migrate_target.go
	}
	addr := op.ListenAddr
	if addr == "" {
		addr = d.cfg.ListenAddr
	}
	l, err := transfer.Listen(addr, op.Key(), "")
	if err != nil {
		return executor.Transient(err)
	}
	defer l.Close()
	ds := d.Dataset(op.Instance)
	mu := d.lockDataset(ds)
	mu.Lock()
	defer mu.Unlock()
	defer d.forgetSums(op)
	listening(l.Addr())
	d.log.Info("receiving", "opcode", op.Key(), "dataset", ds, "addr", l.Addr())
	var received int64
	for {
		s, err := l.Accept(ctx)
		if err != nil {
			if ctx.Err() != nil {
				if errors.Is(context.Cause(ctx), executor.ErrCanceled) {
					if cerr := d.stopIncoming(context.WithoutCancel(ctx), op.Instance); cerr != nil {
						d.log.Error("stopping the incoming VM failed", "instance", op.Instance, "err", cerr)
					}
					if cerr := d.rollbackTarget(context.WithoutCancel(ctx), ds, op.Key()); cerr != nil {
						d.log.Error("rolling back the target failed", "dataset", ds, "err", cerr)
					}
					return fmt.Errorf("%w: receive of %s aborted: %v", executor.ErrCanceled, ds, context.Cause(ctx))
				}
				return ctx.Err()
			}
			return executor.Transient(err)
		}
		done, rerr := d.serve(ctx, s, op, ds, &received, report)
		if done {
			return rerr
		}
	}
}

// serve answers one stream; done says Receive is over (commit or abort).
func (d *Driver) serve(ctx context.Context, s *transfer.Stream, op executor.Op, ds string, received *int64, report func(executor.Progress)) (bool, error) {
	reply := func(meta map[string]string, err error) {
		r := transfer.Reply{OK: err == nil, Meta: meta}
		if err != nil {
			r.Error = err.Error()
		}
		_ = s.Reply(r)
	}
	switch s.Kind {
	case kindHello:
		meta, err := d.hello(ctx, op, ds)
		reply(meta, err)
	case kindRecv:
		n, err := d.receiveSnapshot(ctx, s, op, ds)
		*received += n
		report(executor.Progress{Phase: "sync", Current: *received, Total: *received,
			Message: fmt.Sprintf("received %s@%s", ds, s.Meta["snap"])})
		reply(map[string]string{"bytes": strconv.FormatInt(n, 10)}, err)
	case kindChecksum:
		n, _ := strconv.Atoi(s.Meta["snap"])
		prev, _ := strconv.Atoi(s.Meta["prev"])
		dl, err := decodeDelta(s.Meta["delta"])
		if err != nil {
			reply(nil, executor.Fatal(err))
			break
		}
		var before func(string)
		if hook := d.beforeTargetSum.Load(); hook != nil {
			before = func(root string) { (*hook)(ctx, root, n, prev) }
		}
		ts, err := d.contentSum(ctx, op, n, prev, dl, before)
		reply(map[string]string{"sum": ts.Sum, "blocks": ts.readSums()}, err)
	case kindCommit:
		tidy, err := d.commitTarget(ctx, op, ds, s.Meta)
		if err == nil {
			err = tidy() // before the reply: the source's end is the move's
		}
		reply(nil, err)
		if err == nil {
			d.log.Info("move committed on the target", "opcode", op.Key(), "dataset", ds)
			return true, nil
		}
	case kindAbort:
		err := d.stopIncoming(ctx, op.Instance) // migrate_live.go
		if err == nil {
			err = d.rollbackTarget(ctx, ds, op.Key())
		}
		reply(nil, err)
		if op.AllowFailover && s.Meta["offline"] == "true" {
			return false, nil // the source moves it offline next
		}
		return true, fmt.Errorf("%w: the source aborted the move (%s)", executor.ErrCanceled, s.Meta["why"])
	case kindRuntime:
		if s.Meta["do"] != "incoming" {
			reply(nil, fmt.Errorf("runtime: %q is not for a move", s.Meta["do"]))
			break
		}
		reply(d.incomingHere(ctx, op.Instance)) // migrate_live.go
	default:
		reply(nil, fmt.Errorf("unknown stream kind %q", s.Kind))
	}
	return false, nil
}

func (d *Driver) hello(ctx context.Context, op executor.Op, ds string) (map[string]string, error) {
	meta := map[string]string{"exists": "false", "features": d.feat.Mode()}
	ok, err := exists(ctx, ds)
	if err != nil || !ok {
		return meta, err
	}
	meta["exists"] = "true"
	ns, err := snapNumbers(ctx, ds)
	if err != nil {
		return meta, err
	}
	var ss []string
	for _, n := range ns {
		ss = append(ss, strconv.Itoa(n))
	}
	meta["snaps"] = strings.Join(ss, ",")
	if c, _ := prop(ctx, ds, propCommitted); c == op.Key() {
		meta["committed"] = c
	} else if run, _ := d.cfg.Runtime.Running(ctx, d.instance(ctx, op.Instance)); run {
		meta["running"] = "true" // a migration's switch started it early, uncommitted
	}
	if d.feat.Resumable {
		if t, _ := prop(ctx, ds, "receive_resume_token"); t != "" && t != "-" {
			meta["token"] = t
		}
	}
	return meta, nil
}

// receiveSnapshot pipes the stream's body into `zfs receive -F`. A cut
// body kills the receive, so ZFS discards the partial stream (or, with
// resumable receive, keeps a token), never mistaking it for a whole one.
func (d *Driver) receiveSnapshot(ctx context.Context, s *transfer.Stream, op executor.Op, ds string) (int64, error) {
	n, _ := strconv.Atoi(s.Meta["snap"])
	if n == 0 {
		return 0, fmt.Errorf("recv: bad snapshot %q", s.Meta["snap"])
	}
	// One command reads the move's marks and the quotas: each is a round
	// trip to the daemon, and a final delta is received while the
	// instance is down.
	ps, err := props(ctx, ds, propMigration, propCreated, propBase, "used", "quota", "refquota")
	had := err == nil
	if err != nil && !errors.Is(err, ErrNotFound) {
		return 0, err
	}
	st := stateOf(ps, op.Key())
	saved := st // as the dataset's marks say: saved again only if changed
	if !st.known {
		saved = recvState{}
		st.known, st.created = true, !had
		if had {
			if ns, _ := snapNumbers(ctx, ds); len(ns) > 0 {
				st.base = ns[len(ns)-1]
			}
			if err := d.saveState(ctx, ds, st); err != nil {
				return 0, err
			}
		}
	}
	if s.Meta["base"] == "" && had && s.Meta["token"] == "" {
		// A full stream onto a dataset left by an earlier, unrelated
		// attempt: the source found no common snapshot, so it is stale.
		if err := destroy(ctx, ds); err != nil {
			return 0, err
		}
		st.created = true
		ps = nil // no quota left to make room under
	}
	estimate, _ := strconv.ParseInt(s.Meta["estimate"], 10, 64)
	restore, err := d.quotaHeadroom(ctx, ds, ps, estimate)
	if err != nil {
		return 0, err
	}
	defer restore()

	args := []string{"-F", ds}
	if d.feat.Resumable {
		args = []string{"-s", "-F", ds}
	}
	// A cut stream ends recv's input early, which fails the receive: ZFS
	// discards the partial stream or, resumable, keeps a token.
	rerr := recv(ctx, s, args...)
	got := s.Meter().Stats().Bytes
	if rerr != nil {
		if !had && !d.feat.Resumable {
			// zfs-fuse can leave the dataset of a cut full receive behind
			// ("failed to read from stream"); without resume tokens it is
			// of no use, and nothing of this move is recorded to undo it.
			if derr := destroy(context.WithoutCancel(ctx), ds); derr != nil {
				rerr = errors.Join(rerr, derr)
			}
		}
		return got, rerr
	}
	if st != saved {
		if err := d.saveState(ctx, ds, st); err != nil {
			return got, err
		}
	}
	if s.Meta["final"] == "true" {
		return got, nil // the commit tidies up, out of the downtime
	}
	// The newer snapshot is in: the older ones of this move are not needed
	// any more. The base the dataset had before the move stays until the
	// commit, so that an aborted move can roll back to it.
	ns, err := snapNumbers(ctx, ds)
	if err != nil {
		return got, err
	}
	for _, k := range ns {
		if k < n && (st.created || k != st.base) {
			if err := destroy(ctx, ds+"@"+snapName(k)); err != nil {
				return got, err
			}
		}
	}
	return got, nil
}

// commitTarget ends a successful move on the target: the move's key is
// marked committed (a second Run of the opcode sees the move done) and
// the instance starts if it ran before. A start that fails takes the
// mark back, so the move is not done and its marks still say what it
// created. The returned tidy then drops every snapshot but the one the
// source keeps as replication base (none for zfs-local) and the move's
// marks: outside the downtime where the caller can run it after replying.
func (d *Driver) commitTarget(ctx context.Context, op executor.Op, ds string, meta map[string]string) (func() error, error) {
	keep, _ := strconv.Atoi(meta["keep"])
	if err := setProp(ctx, ds, propCommitted, op.Key()); err != nil {
		return nil, err
	}
	if meta["start"] == "true" {
		if err := d.cfg.Runtime.Start(ctx, d.instance(ctx, op.Instance)); err != nil {
			if ierr := inherit(context.WithoutCancel(ctx), ds, propCommitted); ierr != nil {
				err = errors.Join(err, ierr)
			}
			return nil, err
		}
	}
	return func() error {
		ctx := context.WithoutCancel(ctx) // the receiver may be stopping
		ns, err := snapNumbers(ctx, ds)
		if err != nil {
			return err
		}
		for _, k := range ns {
			if k != keep {
				if err := destroy(ctx, ds+"@"+snapName(k)); err != nil {
					return err
				}
			}
		}
		clearVouched(ctx, ds, propMigration, propCreated, propBase)
		return nil
	}, nil
}

// rollbackTarget undoes what the move with key received: the dataset if
// the move created it, else the snapshots it added, back to the base.
func (d *Driver) rollbackTarget(ctx context.Context, ds, key string) error {
	ok, err := exists(ctx, ds)
	if err != nil || !ok {
		return err
	}
	st := d.loadState(ctx, ds, key)
	if !st.known {
		return nil // nothing of this move arrived
	}
	if st.created {
		return destroy(ctx, ds)
	}
	if st.base > 0 {
		if err := rollback(ctx, ds+"@"+snapName(st.base)); err != nil {
			return err
		}
	}
	ns, err := snapNumbers(ctx, ds)
	if err != nil {
		return err
	}
	for _, k := range ns {
		if k > st.base {
			if err := destroy(ctx, ds+"@"+snapName(k)); err != nil {
				return err
			}
		}
	}
	clearVouched(ctx, ds, propMigration, propCreated, propBase)
	return nil
}

// quotaHeadroom raises the dataset's quota and refquota while a receive of
// about need bytes runs, when they would leave less than that (RFD 34,
// Snapshot quotas), and returns what puts them back. ps holds the
// dataset's used, quota and refquota; nil when it does not exist.
func (d *Driver) quotaHeadroom(ctx context.Context, ds string, ps map[string]string, need int64) (func(), error) {
	if ps == nil {
		return func() {}, nil
	}
	used, err := num(ps["used"])
	if err != nil {
		return nil, err
	}
	var undo []func()
	for _, q := range []string{"quota", "refquota"} {
		limit, err := num(ps[q])
		if err != nil {
			return nil, err
		}
		if limit == 0 || used+need+need/10 < limit*9/10 {
			continue
		}
		raised := used + 2*need + 64<<20
		if err := setProp(ctx, ds, q, strconv.FormatInt(raised, 10)); err != nil {
			return nil, err
		}
		d.log.Info("raised quota for the receive", "dataset", ds, "property", q, "from", limit, "to", raised)
		q, limit := q, limit
		undo = append(undo, func() {
			if err := setProp(context.WithoutCancel(ctx), ds, q, strconv.FormatInt(limit, 10)); err != nil {
				d.log.Warn("restoring quota failed", "dataset", ds, "property", q, "err", err)
			}
		})
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}, nil
}
