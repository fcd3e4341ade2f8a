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
// record with message msg, and counts errors.
type signalHandler struct {
	msg    string
	once   *sync.Once
	ready  chan struct{}
	errors *atomic.Int64
}

func (h signalHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h signalHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		h.once.Do(func() { close(h.ready) })
	}
	if r.Level >= slog.LevelError {
		h.errors.Add(1)
	}
	return nil
}
func (h signalHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h signalHandler) WithGroup(string) slog.Handler      { return h }

// simExecutor is one simulated executor running in this process.
type simExecutor struct {
	node   string
	bytes  counter
	ready  chan struct{}
	errors atomic.Int64
	done   chan error
}

// fleet is the simulated executors.
type fleet struct {
	execs  []*simExecutor
	cancel context.CancelFunc
}

// simConfig is the demo's simulated data path on a clock 20 times faster
// than real time: moves of real-sized instances last seconds.
func simConfig() sim.Config {
	c := allinone.DemoSim()
	c.Clock = sim.FastClock(20)
	return c
}

// startExecutors starts one executor per node, each with its own Kafka
// client (and byte counter) and its own simulated driver.
func startExecutors(brokers, nodes []string) (*fleet, error) {
	ctx, cancel := context.WithCancel(context.Background())
	f := &fleet{cancel: cancel}
	for _, node := range nodes {
		x := &simExecutor{node: node, ready: make(chan struct{}), done: make(chan error, 1)}
		d, err := sim.New(simConfig())
		if err != nil {
			f.stop()
			return nil, err
		}
		log := slog.New(signalHandler{msg: "executor running", once: &sync.Once{}, ready: x.ready, errors: &x.errors})
		e, err := executor.New(executor.Config{Node: node,
			Kafka: kafka.Config{Brokers: brokers, ClientID: "fleet-executor-" + node, Dial: x.bytes.dial,
				FetchMaxWait: 250 * time.Millisecond, Logger: log},
			Logger: log, Metrics: prometheus.NewRegistry(), PlainTransfer: true}, d)
		if err != nil {
			f.stop()
			return nil, err
		}
		f.execs = append(f.execs, x)
		go func() { x.done <- e.Run(ctx) }()
	}
	return f, nil
}

// waitReady waits until every executor has recovered its state from the
// log and follows it.
func (f *fleet) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for _, x := range f.execs {
		select {
		case <-x.ready:
		case err := <-x.done:
			return fmt.Errorf("executor %s stopped: %v", x.node, err)
		case <-deadline.C:
			return fmt.Errorf("executor %s not running within %s", x.node, timeout)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (f *fleet) stop() {
	f.cancel()
	for _, x := range f.execs {
		<-x.done
	}
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
