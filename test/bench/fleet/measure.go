package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/planner"
)

// watcher follows drove.plans and drove.requests and notes when each
// request's first plan and its end are seen.
type watcher struct {
	mu       sync.Mutex
	changed  chan struct{} // closed and replaced at every note
	planned  map[string]time.Time
	unplaced map[string]int    // request -> instances its plans could not place
	ended    map[string]string // request -> how: finished, or rejected: reason
	done     chan error
	stopOnce sync.Once
	cancel   context.CancelFunc
}

func startWatcher(brokers []string) (*watcher, error) {
	cfg := kafka.Config{Brokers: brokers, ClientID: "fleet-watch", FetchMaxWait: 20 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	w := &watcher{changed: make(chan struct{}), planned: map[string]time.Time{}, unplaced: map[string]int{},
		ended: map[string]string{}, done: make(chan error, 1), cancel: cancel}
	go func() { w.done <- follow(ctx, cfg, []string{events.TopicPlans, events.TopicRequests}, nil, w.handle) }()
	return w, nil
}

func (w *watcher) handle(_ context.Context, rec kafka.Record) error {
	now := time.Now()
	p, err := rec.Event.DecodePayload()
	if err != nil {
		return nil // not ours to judge
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch e := p.(type) {
	case events.PlanComputed:
		if _, seen := w.planned[e.Request]; !seen {
			w.planned[e.Request] = now
		}
		w.unplaced[e.Request] += len(e.Failed)
	case events.RequestRejected:
		w.ended[e.Request] = "rejected: " + e.Reason
	case events.RequestFinished:
		w.ended[e.Request] = fmt.Sprintf("finished: %d moved, %d failed%s", len(e.Moved), len(e.Failed),
			failures(e.Failed, w.unplaced[e.Request]))
	default:
		return nil
	}
	close(w.changed)
	w.changed = make(chan struct{})
	return nil
}

// failures says why instances did not move: how many the plans could not
// place, and the commonest reasons.
func failures(fs []events.Failed, unplaced int) string {
	if len(fs) == 0 {
		return ""
	}
	n := map[string]int{}
	for _, f := range fs {
		n[f.Reason]++
	}
	reasons := slices.SortedFunc(maps.Keys(n), func(a, b string) int { return cmp.Or(n[b]-n[a], strings.Compare(a, b)) })
	var parts []string
	for _, r := range reasons[:min(3, len(reasons))] {
		parts = append(parts, fmt.Sprintf("%d× %q", n[r], r))
	}
	return fmt.Sprintf(" (%d of them not placed by the plan; %s)", unplaced, strings.Join(parts, ", "))
}

// waitFor waits until cond (called under the lock) holds or timeout passes.
func (w *watcher) waitFor(ctx context.Context, timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		w.mu.Lock()
		ok, ch := cond(), w.changed
		w.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// planLatency appends env (a request), then waits for its plan: the time
// from the append's return to the plan seen, or why there is none.
func (w *watcher) planLatency(ctx context.Context, prod *kafka.Producer, env events.Envelope, id string, timeout time.Duration) (*float64, string) {
	topic, _ := env.Topic()
	if err := prod.Append(ctx, topic, env); err != nil {
		return nil, fmt.Sprintf("request not appended: %v", err)
	}
	appended := time.Now()
	var how string
	w.waitFor(ctx, timeout, func() bool {
		_, planned := w.planned[id]
		how = w.ended[id]
		return planned || how != ""
	})
	w.mu.Lock()
	at, planned := w.planned[id]
	w.mu.Unlock()
	switch {
	case planned:
		return f64(at.Sub(appended).Seconds()), ""
	case how != "":
		return nil, "no plan: the request was " + how
	default:
		return nil, fmt.Sprintf("no plan within %s (the planner service is still computing or stuck)", timeout)
	}
}

func (w *watcher) stop() {
	w.stopOnce.Do(func() {
		w.cancel()
		<-w.done
	})
}

func request(p events.Payload, id string) events.Envelope {
	return events.New(p, events.WithProducer("fleet-bench"),
		events.WithReason(events.Reason{Actor: "operator:fleet-bench", Why: "fleet benchmark", RequestID: id}))
}

// reference reads the executor's topics whole, as every executor does
// before it reads only its own partition, and counts what it receives and
// the opcodes dispatched to each node.
type reference struct {
	bytes      counter
	reader     atomic.Pointer[kafka.Reader]
	mu         sync.Mutex
	records    int64
	dispatched map[string]int
	cancel     context.CancelFunc
	done       chan error
}

func startReference(brokers []string) (*reference, error) {
	r := &reference{dispatched: map[string]int{}, done: make(chan error, 1)}
	cfg := kafka.Config{Brokers: brokers, ClientID: "fleet-reference", Dial: r.bytes.dial,
		FetchMaxWait: 250 * time.Millisecond}
	topics := []string{events.TopicOpcodes, events.TopicInventory, events.TopicSettings}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		r.done <- follow(ctx, cfg, topics, r.reader.Store, func(_ context.Context, rec kafka.Record) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.records++
			if rec.Event.Type == events.TypeOpcodeDispatched {
				if d, err := events.As[events.OpcodeDispatched](rec.Event); err == nil {
					r.dispatched[d.Node]++
				}
			}
			return nil
		})
	}()
	return r, nil
}

func (r *reference) stop() {
	r.cancel()
	<-r.done
}

// fetchedBytes is the bytes of topic the reference's reader fetched.
func (r *reference) fetchedBytes(topic string) int64 {
	if rd := r.reader.Load(); rd != nil {
		return rd.Fetched()[topic].Bytes
	}
	return 0
}

func (r *reference) snapshot() (bytes, records int64, dispatched map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := make(map[string]int, len(r.dispatched))
	for k, v := range r.dispatched {
		d[k] = v
	}
	return r.bytes.n.Load(), r.records, d
}

// measureEvacuation evacuates the first cfg.evacuate executors' nodes and
// measures the plan's latency, then lets the moves run and compares what
// each evacuated node's executor received with what the reference reader
// received over the same window.
func measureEvacuation(ctx context.Context, cfg config, r *result, out io.Writer, w *watcher, prod *kafka.Producer, f *fleet, ref *reference) {
	settle(ctx, func() int64 {
		var sum int64
		for _, n := range f.received() {
			sum += n
		}
		b, recs, _ := ref.snapshot()
		return sum + b + recs<<17 // a record handled counts as reading too
	}, 2*time.Second, 5*time.Minute)
	before := f.received()
	opsBefore, setBefore := f.fetched(events.TopicOpcodes), f.fetched(events.TopicSettings)
	refOps0 := ref.fetchedBytes(events.TopicOpcodes)
	refBytes0, refRecs0, disp0 := ref.snapshot()

	var nodes []string
	for _, x := range f.execs[:cfg.evacuate] {
		nodes = append(nodes, x.node)
	}
	id := events.NewID()
	env := request(events.EvacuationRequested{Request: id, Nodes: nodes, Mode: events.EvacAll}, id)
	fmt.Fprintf(out, "evacuating %d nodes (%s ...)\n", len(nodes), nodes[0])
	lat, why := w.planLatency(ctx, prod, env, id, cfg.planTimeout)
	if lat == nil {
		r.note(out, "executor_fetch_fraction", "the evacuation was not planned: %s", why)
	} else {
		fmt.Fprintf(out, "  evacuation planned in %.2fs with %d executors running\n", *lat, len(f.execs))
		r.note(out, "plan_latency_evacuate_s", "with %d executors running (their polls and heartbeats on the same 2 cores and in-process broker), this evacuation, run, was planned in %.2fs", len(f.execs), *lat)
		ok := w.waitFor(ctx, cfg.runTimeout, func() bool { return w.ended[id] != "" })
		w.mu.Lock()
		how := w.ended[id]
		w.mu.Unlock()
		if !ok {
			how = fmt.Sprintf("still running after %s", cfg.runTimeout)
		}
		fmt.Fprintf(out, "  evacuation %s\n", how)
		r.note(out, "executor_fetch_fraction", "window: the evacuation's run (%s)", how)
	}
	// Let the last progress reach every reader before reading the counters.
	settle(ctx, func() int64 { b, recs, _ := ref.snapshot(); return b + recs<<17 }, time.Second, 30*time.Second)
	after := f.received()
	opsAfter, setAfter := f.fetched(events.TopicOpcodes), f.fetched(events.TopicSettings)
	refOps := ref.fetchedBytes(events.TopicOpcodes) - refOps0
	refBytes1, refRecs1, disp1 := ref.snapshot()
	refBytes := refBytes1 - refBytes0
	var sum, opsSum float64
	var n int
	var dispatched int
	var settings int64
	for i, x := range f.execs {
		got := disp1[x.node] - disp0[x.node]
		if got == 0 || refBytes <= 0 || refOps <= 0 {
			continue
		}
		dispatched += got
		sum += float64(after[i]-before[i]) / float64(refBytes)
		opsSum += float64(opsAfter[i]-opsBefore[i]) / float64(refOps)
		settings += setAfter[i] - setBefore[i]
		n++
	}
	if n == 0 {
		r.note(out, "executor_fetch_fraction", "no opcode was dispatched to a running executor in the window")
		return
	}
	r.ExecutorFetchFraction = f64(sum / float64(n))
	r.note(out, "executor_fetch_fraction",
		"bytes each of the %d executors with opcodes dispatched to them in the window (the evacuated nodes, and the targets that run a job's later opcodes) received from the broker over the window, on every connection (fetches, its appends' answers, checkpoints), over what a reader of all of drove.opcodes, .inventory and .settings received (%d bytes, %d records, %d opcodes dispatched to these executors, mean %.1f each); 1/partitions = %.3f. "+
			"Executors read no inventory (their dispatches carry the facts), so this is below 1/partitions: of drove.opcodes alone they fetched %.3f of the reference's fetch (%d bytes), their own partition's share; drove.settings, read whole at each start, cost them %d bytes in all over the window",
		n, refBytes, refRecs1-refRecs0, dispatched, float64(dispatched)/float64(n), 1/float64(cfg.partitions),
		opsSum/float64(n), refOps, settings)
}

// measureDryEvacuation asks (dry run: planned, not run) to evacuate
// nodes, before the executors start, then cancels the request: the plan
// latency of the planner service alone, which the fleet's load on this
// machine would otherwise inflate. The same evacuation then runs with the
// executors (measureEvacuation).
func measureDryEvacuation(ctx context.Context, cfg config, r *result, out io.Writer, w *watcher, prod *kafka.Producer, nodes []string) {
	id := events.NewID()
	env := request(events.EvacuationRequested{Request: id, Nodes: nodes, Mode: events.EvacAll, DryRun: true}, id)
	fmt.Fprintf(out, "evacuating %d nodes (%s ...), dry run, before the executors start\n", len(nodes), nodes[0])
	lat, why := w.planLatency(ctx, prod, env, id, cfg.planTimeout)
	r.PlanLatencyEvacuateS = lat
	if lat == nil {
		r.note(out, "plan_latency_evacuate_s", "%s", why)
	} else {
		fmt.Fprintf(out, "  evacuation planned in %.2fs\n", *lat)
		r.note(out, "plan_latency_evacuate_s", "%d nodes, dry run, before the executors start (then cancelled)", len(nodes))
	}
	w.cancelRequest(ctx, prod, id, cfg.planTimeout)
}

// cancelRequest cancels request id and waits until it has ended (or timeout),
// so that a later request may move its instances.
func (w *watcher) cancelRequest(ctx context.Context, prod *kafka.Producer, id string, timeout time.Duration) {
	if err := prod.Append(ctx, events.TopicRequests, request(events.RequestCancelled{Request: id}, id)); err != nil {
		return
	}
	w.waitFor(ctx, timeout, func() bool { return w.ended[id] != "" })
}

// measureGroupChange asks (dry run: planned, not run) to move every
// instance of the second group's primaries to any other group, then
// cancels the request.
func measureGroupChange(ctx context.Context, cfg config, r *result, out io.Writer, w *watcher, prod *kafka.Producer, c *planner.Cluster) {
	var names []string
	for _, in := range c.Instances {
		if c.Nodes[in.Primary].Group == 1 {
			names = append(names, in.Name)
		}
	}
	id := events.NewID()
	env := request(events.GroupChangeRequested{Request: id, Instances: names, DryRun: true}, id)
	fmt.Fprintf(out, "changing the group of %d instances (a %d-node group's), dry run\n", len(names), cfg.groupNodes)
	lat, why := w.planLatency(ctx, prod, env, id, cfg.planTimeout)
	defer w.cancelRequest(ctx, prod, id, cfg.planTimeout)
	r.PlanLatencyGroupChangeS = lat
	if lat == nil {
		r.note(out, "plan_latency_group_change_s", "%s", why)
		return
	}
	fmt.Fprintf(out, "  group change planned in %.2fs\n", *lat)
	r.note(out, "plan_latency_group_change_s", "%d instances of group %s to any other group, dry run, before the executors start (then cancelled)", len(names), c.Groups[1].Name)
}

// follow reads topics from their start and goes on following, handing
// every record that decodes to handle, until ctx ends; opened, if not nil,
// is given the reader.
func follow(ctx context.Context, cfg kafka.Config, topics []string, opened func(*kafka.Reader), handle func(context.Context, kafka.Record) error) error {
	r, err := kafka.NewReader(ctx, cfg, kafka.ReadOptions{Topics: topics, Follow: true})
	if err != nil {
		return err
	}
	defer r.Close()
	if opened != nil {
		opened(r)
	}
	for {
		b, err := r.Next(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		for _, raw := range b.Records {
			if rec, err := raw.Decode(); err == nil {
				if err := handle(ctx, rec); err != nil {
					return err
				}
			}
		}
	}
}

// measureRestart restarts the executor of the first evacuated node, whose
// partition now holds the evacuation's records, and notes how long it
// took to run again and what it read: its partition from its checkpoint,
// not the log's history.
func measureRestart(ctx context.Context, r *result, out io.Writer, f *fleet) {
	node := f.execs[0].node
	r0, err := kafka.NewReader(ctx, kafka.Config{Brokers: f.brokers, ClientID: "fleet-ends"},
		kafka.ReadOptions{Topics: []string{events.TopicOpcodes}, Keys: map[string][]string{events.TopicOpcodes: {node}}})
	if err != nil {
		r.note(out, "executors", "restart not measured: %v", err)
		return
	}
	var holds int64
	for _, end := range r0.Ends() {
		holds += end
	}
	r0.Close()
	x, err := f.restart(ctx, 0, 5*time.Minute)
	if err != nil {
		r.note(out, "executors", "restart not measured: %v", err)
		return
	}
	got := x.ex.Fetched()
	r.note(out, "executors", "restarted in a running fleet, %s's executor ran again in %.2fs (%.2fs to ensure the topics, load its checkpoint and open its reader, the rest reading and recovering), having fetched %d records (%d bytes, transaction markers included) of its partition of drove.opcodes (which held %d records at the restart, the evacuation's included: it resumed from its checkpoint), %d of drove.settings and %d of drove.inventory",
		node, x.startTime(), x.opening(), got[events.TopicOpcodes].Records, got[events.TopicOpcodes].Bytes, holds,
		got[events.TopicSettings].Records, got[events.TopicInventory].Records)
}
