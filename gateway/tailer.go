package gateway

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The tailer is the one reader of event_log for every watch stream of a
// gateway: it polls by seq while anyone watches and fans each new row out
// to the subscribers whose filter matches. It runs only while there are
// subscribers, so a gateway nobody watches costs the database nothing.
//
// Seq is a bigserial, handed out when a row is inserted, not when its
// transaction commits: a row with a lower seq can become visible after a
// higher one was read. Reading only "seq > highest seen" would lose it for
// good. So a skipped seq is remembered as a gap and looked up again on
// every poll for gapWait; most gaps are never filled (a rolled-back insert
// or an upsert that hit a conflict also burns a seq), and those are
// forgotten after gapWait.
const (
	tailBatch  = 1000             // rows per poll
	gapWait    = 10 * time.Second // how long a skipped seq may still appear
	maxGapSpan = 1000             // a jump wider than this is not tracked seq by seq
)

type tailer struct {
	db       *store
	interval time.Duration
	log      *slog.Logger
	polls    prometheus.Counter

	mu   sync.Mutex
	subs map[*subscription]struct{}
	run  *tailRun // nil when nobody watches
}

// tailRun is one stretch of polling, from the first subscriber to the
// last one leaving.
type tailRun struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	last   int64               // highest seq seen
	gaps   map[int64]time.Time // seqs skipped, and when first skipped
}

// subscription is one watcher's feed. Rows arrive on ch in the order the
// tailer saw them; cut is closed if the watcher fell WatchBuffer rows
// behind, after which ch gets nothing more.
type subscription struct {
	t     *tailer
	match func(logRow) bool
	ch    chan logRow
	cut   chan struct{}
}

func newTailer(db *store, interval time.Duration, log *slog.Logger, polls prometheus.Counter) *tailer {
	return &tailer{db: db, interval: interval, log: log, polls: polls, subs: map[*subscription]struct{}{}}
}

// subscribe registers a watcher. Every row committed after subscribe
// returns and matching match is delivered, so a watcher that reads its
// history after subscribing misses nothing (it may see a row twice, and
// must skip by seq).
func (t *tailer) subscribe(ctx context.Context, match func(logRow) bool, buffer int) (*subscription, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.run == nil {
		// Start from what is committed now: older rows are history, which
		// each watcher reads for itself.
		var last int64
		if err := t.db.pool.QueryRow(ctx, t.db.q.get("tail_start")).Scan(&last); err != nil {
			return nil, err
		}
		rctx, cancel := context.WithCancel(context.Background())
		t.run = &tailRun{ctx: rctx, cancel: cancel, done: make(chan struct{}), last: last, gaps: map[int64]time.Time{}}
		go t.loop(t.run)
	}
	s := &subscription{t: t, match: match, ch: make(chan logRow, buffer), cut: make(chan struct{})}
	t.subs[s] = struct{}{}
	return s, nil
}

// close unregisters the watcher; the last one out stops the polling and
// waits for it, so no goroutine outlives the watchers.
func (s *subscription) close() {
	t := s.t
	t.mu.Lock()
	delete(t.subs, s)
	var stopped *tailRun
	if len(t.subs) == 0 && t.run != nil {
		stopped = t.run
		t.run = nil
		stopped.cancel()
	}
	t.mu.Unlock()
	if stopped != nil {
		<-stopped.done
	}
}

func (t *tailer) loop(run *tailRun) {
	defer close(run.done)
	tick := time.NewTicker(t.interval)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-run.ctx.Done():
			return
		case <-tick.C:
		}
		rows, err := t.poll(run)
		if err != nil {
			if run.ctx.Err() != nil {
				return
			}
			if !failing { // once per outage, not every 150ms
				t.log.Warn("watch tailer: polling event_log failed; retrying", "err", err)
			}
			failing = true
			continue
		}
		if failing {
			t.log.Info("watch tailer: polling event_log works again")
			failing = false
		}
		t.deliver(run, rows)
	}
}

// poll returns the rows that appeared since the last poll, by seq: new
// rows past the highest seen, and late rows that fill a gap.
func (t *tailer) poll(run *tailRun) ([]logRow, error) {
	t.polls.Inc()
	var out []logRow
	now := time.Now()
	if len(run.gaps) > 0 {
		seqs := slices.Sorted(maps.Keys(run.gaps))
		late, err := many[logRow](run.ctx, t.db, "tail_gaps", seqs)
		if err != nil {
			return nil, err
		}
		for _, r := range late {
			delete(run.gaps, r.Seq)
		}
		out = append(out, late...)
	}
	rows, err := many[logRow](run.ctx, t.db, "tail_after", run.last, tailBatch)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		if jump := r.Seq - run.last; jump > 1 && jump <= maxGapSpan {
			for s := run.last + 1; s < r.Seq; s++ {
				run.gaps[s] = now
			}
		}
		run.last = r.Seq
	}
	out = append(out, rows...)
	for s, at := range run.gaps {
		if now.Sub(at) > gapWait {
			delete(run.gaps, s)
		}
	}
	slices.SortFunc(out, func(a, b logRow) int { return cmp.Compare(a.Seq, b.Seq) })
	return out, nil
}

// deliver hands rows to the matching subscribers without ever blocking: a
// subscriber whose buffer is full is cut off, so one slow watcher cannot
// hold back the others.
func (t *tailer) deliver(run *tailRun, rows []logRow) {
	if len(rows) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.run != run {
		return // stopped while polling; a new run has its own subscribers' start
	}
	for s := range t.subs {
		for _, r := range rows {
			if !s.match(r) {
				continue
			}
			select {
			case s.ch <- r:
			default:
				close(s.cut)
				delete(t.subs, s)
			}
			if _, still := t.subs[s]; !still {
				break
			}
		}
	}
}
