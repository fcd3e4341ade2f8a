package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/sim"
)

// counter counts the bytes a Kafka client receives from the broker, on
// every connection it dials: fetches, mostly.
type counter struct{ n atomic.Int64 }

func (c *counter) dial(ctx context.Context, network, host string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, host)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, c: c}, nil
}

type countingConn struct {
	net.Conn
	c *counter
}

func (cc *countingConn) Read(p []byte) (int, error) {
	n, err := cc.Conn.Read(p)
	cc.c.n.Add(int64(n))
	return n, err
}

// signalHandler is a quiet slog handler that closes ready at the first
// record with message msg (noting when in at), notes when the executor
// opened its reader (reading), and counts errors.
type signalHandler struct {
	msg     string
	once    *sync.Once
	ready   chan struct{}
	at      *atomic.Int64
	reading *atomic.Int64
	errors  *atomic.Int64
}

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	switch r.Message {
	case h.msg:
		h.once.Do(func() { h.at.Store(time.Now().UnixNano()); close(h.ready) })
	case "executor reading":
		h.reading.CompareAndSwap(0, time.Now().UnixNano())
	}
	if r.Level >= slog.LevelError {
		h.errors.Add(1)
		msg := r.Message
		r.Attrs(func(a slog.Attr) bool { msg += " " + a.String(); return true })
		firstError.CompareAndSwap(nil, msg)
	}
	return nil
}

// firstError is the first error any executor logged, for the notes.
var firstError atomic.Value

func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h signalHandler) WithGroup(string) slog.Handler      { return h }

// simExecutor is one simulated executor running in this process.
type simExecutor struct {
	node    string
	ex      *executor.Executor
	bytes   counter
	ready   chan struct{}
	started time.Time
	readyAt atomic.Int64 // unix nanoseconds of its "executor running"; 0 before
	// readingAt is when it had its reader open (topics ensured,
	// checkpoint loaded, partition bounds listed): "executor reading".
	readingAt atomic.Int64
	errors    atomic.Int64
	cancel    context.CancelFunc
	done      chan error
}

// fleet is the simulated executors.
type fleet struct {
	brokers []string
	execs   []*simExecutor
	cancel  context.CancelFunc
	ctx     context.Context
}

// startTimes are the executors' times from Run to "executor running",
// in seconds: each one's own start, under the load of the others'.
func (f *fleet) startTimes() []float64 {
	var out []float64
	for _, x := range f.execs {
		if at := x.readyAt.Load(); at > 0 {
			out = append(out, x.startTime())
		}
	}
	return out
}

// startTime is x's time from Run to running, in seconds.
func (x *simExecutor) startTime() float64 {
	return time.Unix(0, x.readyAt.Load()).Sub(x.started).Seconds()
}

// opening is x's time from Run to its reader open, in seconds.
func (x *simExecutor) opening() float64 {
	return time.Unix(0, x.readingAt.Load()).Sub(x.started).Seconds()
}

// simConfig is the demo's simulated data path on a clock 20 times faster
// than real time: moves of real-sized instances last seconds.
func simConfig() sim.Config {
	c := allinone.DemoSim()
	c.Clock = sim.FastClock(20)
	return c
}

// startExecutors starts one executor per node, each with its own Kafka
// clients (and byte counter) and its own simulated driver, wave at a time
// (as a rolling start would): each wave's executors start together, the
// next once they all run. On an error the executors started are returned
// too, for the caller to stop.
func startExecutors(ctx context.Context, brokers, nodes []string, wave int, timeout time.Duration) (*fleet, error) {
	fctx, cancel := context.WithCancel(context.Background())
	f := &fleet{brokers: brokers, cancel: cancel, ctx: fctx}
	for len(nodes) > 0 {
		n := min(wave, len(nodes))
		for _, node := range nodes[:n] {
			x, err := f.launch(node)
			if err != nil {
				return f, err
			}
			f.execs = append(f.execs, x)
		}
		if err := f.waitReady(ctx, f.execs[len(f.execs)-n:], timeout); err != nil {
			return f, fmt.Errorf("after %d running: %w", len(f.execs)-n, err)
		}
		nodes = nodes[n:]
	}
	return f, nil
}

// launch runs one executor of node.
func (f *fleet) launch(node string) (*simExecutor, error) {
	x := &simExecutor{node: node, ready: make(chan struct{}), done: make(chan error, 1)}
	d, err := sim.New(simConfig())
	if err != nil {
		return nil, err
	}
	log := slog.New(signalHandler{msg: "executor running", once: &sync.Once{}, ready: x.ready, at: &x.readyAt,
		reading: &x.readingAt, errors: &x.errors})
	e, err := executor.New(executor.Config{Node: node,
		// The default FetchMaxWait (1s), as in production: an idle
		// executor's long poll is most of what a large fleet costs the
		// broker; work arrives as soon as it is appended whatever it is.
		Kafka:  kafka.Config{Brokers: f.brokers, ClientID: "fleet-executor-" + node, Dial: x.bytes.dial, Logger: log},
		Logger: log, Metrics: prometheus.NewRegistry(), PlainTransfer: true}, d)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(f.ctx)
	x.ex, x.started, x.cancel = e, time.Now(), cancel
	go func() { x.done <- e.Run(ctx) }()
	return x, nil
}

// restart stops executor i and starts its node's executor again, which
// resumes from its checkpoint; it returns the new one once it runs.
func (f *fleet) restart(ctx context.Context, i int, timeout time.Duration) (*simExecutor, error) {
	old := f.execs[i]
	old.cancel()
	err := <-old.done
	old.done <- err // for stop, should this restart fail
	if err != nil {
		return nil, fmt.Errorf("executor %s: %w", old.node, err)
	}
	x, err := f.launch(old.node)
	if err != nil {
		return nil, err
	}
	f.execs[i] = x
	select {
	case <-x.ready:
		return x, nil
	case err := <-x.done:
		x.done <- err // for stop
		return nil, fmt.Errorf("executor %s stopped: %v", x.node, err)
	case <-time.After(timeout):
		return nil, fmt.Errorf("executor %s not running within %s", x.node, timeout)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// waitReady waits until every executor of execs has recovered its state
// from the log and follows it.
func (f *fleet) waitReady(ctx context.Context, execs []*simExecutor, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for _, x := range execs {
		select {
		case <-x.ready:
		case err := <-x.done:
			x.done <- err // for stop
			return fmt.Errorf("executor %s stopped: %v", x.node, err)
		case <-deadline.C:
			return fmt.Errorf("executor %s not running within %s", x.node, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// stop stops every executor and waits up to a minute for them; it
// returns how many had not stopped by then.
func (f *fleet) stop() int {
	f.cancel()
	deadline := time.After(time.Minute)
	for i, x := range f.execs {
		select {
		case <-x.done:
		case <-deadline:
			return len(f.execs) - i
		}
	}
	return 0
}

// fetched is the bytes of topic each executor's reader fetched so far.
func (f *fleet) fetched(topic string) []int64 {
	out := make([]int64, len(f.execs))
	for i, x := range f.execs {
		out[i] = x.ex.Fetched()[topic].Bytes
	}
	return out
}

// received is each executor's bytes received so far.
func (f *fleet) received() []int64 {
	out := make([]int64, len(f.execs))
	for i, x := range f.execs {
		out[i] = x.bytes.n.Load()
	}
	return out
}

// settle waits until read grows by no more than a trickle for quiet (they have
// read what they were catching up on), or timeout.
func settle(ctx context.Context, read func() int64, quiet, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	last, since := read(), time.Now()
	for time.Now().Before(deadline) && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond): // polling a counter, bounded by the deadline
		}
		// Idle clients still receive empty long-poll answers and
		// heartbeats: only more than a trickle counts as reading.
		if n := read(); n-last > 64<<10 {
			last, since = n, time.Now()
		} else if time.Since(since) >= quiet {
			return
		}
	}
}
