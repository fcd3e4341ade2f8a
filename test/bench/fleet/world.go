package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/drovehq/drove/deploy/embedded"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
	"github.com/drovehq/drove/planner/service"
	"github.com/drovehq/drove/test/bench/subproc"
)

// world is the bench's infrastructure: a temporary directory, the
// embedded broker and the drove binary.
type world struct {
	cfg     config
	out     io.Writer
	tmp     string
	bin     string
	broker  *embedded.BrokerServer
	brokers []string
	quiet   *slog.Logger
	// appended counts the events the bench itself appended.
	appended int64
}

func runBench(ctx context.Context, cfg config, out io.Writer) (*result, error) {
	r := newResult(cfg)
	w := &world{cfg: cfg, out: out, quiet: slog.New(slog.NewTextHandler(io.Discard, nil))}
	var err error
	if w.tmp, err = os.MkdirTemp("", "drove-bench-fleet-"); err != nil {
		return nil, err
	}
	defer os.RemoveAll(w.tmp)
	// As root, Postgres runs as the postgres user, who must reach its dir.
	for d := w.tmp; d != "/" && d != filepath.Dir(os.TempDir()); d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	if w.bin, err = subproc.DroveBinary(ctx, cfg.droveBin, w.tmp); err != nil {
		return nil, err
	}
	w.broker, err = embedded.StartBroker(embedded.Broker{Dir: filepath.Join(w.tmp, "kafka"),
		Partitions: cfg.partitions, Logger: w.quiet})
	if err != nil {
		return nil, err
	}
	defer w.broker.Stop()
	w.brokers = w.broker.Addrs()
	kc := kafka.Config{Brokers: w.brokers, ClientID: "fleet-bench", Logger: w.quiet}
	if err := kafka.EnsureTopics(ctx, kc, cfg.partitions, events.Topics()...); err != nil {
		return nil, err
	}

	c, err := w.seed(ctx, r)
	if err != nil {
		return r, err
	}
	small := w.appended
	pl, took, err := w.startPlanner(ctx)
	if err != nil {
		r.note(out, "planner_restart_s_small", "%v", err)
	} else {
		r.PlannerRestartSSmall, r.LogEventsSmall = f64(took), i64(small)
		fmt.Fprintf(out, "planner service ready in %.2fs on a log of %d events\n", took, small)
		r.note(out, "planner_restart_s_small", "the first start (no snapshot yet); the service's own account: %s", restartFields(pl.readyLine))
	}
	rss := 0.0
	if pl != nil {
		w.work(ctx, r, c)
	} else {
		r.note(out, "plan_latency_evacuate_s", "the planner service did not start")
	}
	// The log grows while the planner service runs, as in production: it
	// folds the history (and snapshots it, where it can) before it stops.
	if err := w.history(ctx); err != nil {
		return r, err
	}
	if pl != nil {
		w.waitPlannerCaughtUp(ctx, r, pl)
		first := w.rss(pl, r, "planner_rss_mb")
		rss = max(rss, first)
		r.note(out, "planner_rss_mb", "the first planner process, after the requests and the history: %.0f MB", first)
		pl.Stop()
	}
	pl, took, err = w.startPlanner(ctx)
	if err != nil {
		r.note(out, "planner_restart_s", "%v", err)
	} else {
		r.PlannerRestartS, r.LogEvents = f64(took), i64(w.appended)
		fmt.Fprintf(out, "planner service restarted, ready in %.2fs on a log of %d events\n", took, w.appended)
		r.note(out, "planner_restart_s", "from the process's start to its ready line; the service's own account: %s", restartFields(pl.readyLine))
		again := w.rss(pl, r, "planner_rss_mb")
		rss = max(rss, again)
		r.note(out, "planner_rss_mb", "the restarted planner process, once ready: %.0f MB", again)
		pl.Stop()
	}
	r.note(out, "log_events", "events the bench appended (inventory and history); the services' own events come on top")
	if rss > 0 {
		r.PlannerRSSMB = f64(rss)
	}
	w.executorRSS(ctx, r, c)
	if err := w.projector(ctx, r); err != nil {
		r.note(out, "projector_live_eps", "%v", err)
	}
	return r, nil
}

// seed generates the fleet and appends its inventory.
func (w *world) seed(ctx context.Context, r *result) (*planner.Cluster, error) {
	cfg := w.cfg
	spec := clustergen.DefaultSpec()
	spec.Groups, spec.NodesPerGroup, spec.InstancesPerNode = cfg.nodes/cfg.groupNodes, cfg.groupNodes, cfg.perNode
	spec.Fill, spec.Seed = 0.5, 2026
	began := time.Now()
	c, err := clustergen.Generate(spec)
	if err != nil {
		return nil, err
	}
	r.Nodes, r.Instances = len(c.Nodes), len(c.Instances)
	envs := service.InventoryEvents(c, events.Reason{Actor: "fleet-bench", Why: "fleet benchmark"})
	p, err := kafka.NewProducer(kafka.Config{Brokers: w.brokers, ClientID: "fleet-seed", TransactionalID: "fleet-seed", Logger: w.quiet})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if err := service.Seed(ctx, p, envs); err != nil {
		return nil, err
	}
	w.appended += int64(len(envs))
	fmt.Fprintf(w.out, "seeded %d nodes in %d groups and %d instances: %d events in %.1fs\n",
		len(c.Nodes), len(c.Groups), len(c.Instances), len(envs), time.Since(began).Seconds())
	return c, nil
}

// startPlanner runs `drove planner` and returns it once it has rebuilt its
// state from the log, with the time that took from the process's start.
// Its snapshots (where the service keeps them) go to a directory of the
// bench's, the same for every start.
func (w *world) startPlanner(ctx context.Context) (*plannerProc, float64, error) {
	port, err := embedded.FreePort()
	if err != nil {
		return nil, 0, err
	}
	began := time.Now()
	sp, err := subproc.Start("planner", w.bin, []string{"planner", "--brokers", strings.Join(w.brokers, ","),
		"--standby=false", "--max-running-moves", "1000", "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", port)},
		[]string{"DROVE_PLANNER_SNAPSHOT_DIR=" + filepath.Join(w.tmp, "planner-snapshots")},
		filepath.Join(w.tmp, fmt.Sprintf("planner-%d.log", began.UnixNano())), plannerReady)
	if err != nil {
		return nil, 0, err
	}
	ready, err := sp.Wait(ctx, plannerReady, 10*time.Minute)
	if err != nil {
		sp.Stop()
		return nil, 0, err
	}
	p := &plannerProc{Proc: sp, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", port), readyLine: ready.Line}
	return p, time.Since(began).Seconds(), nil
}

// plannerReady is the planner service's log line once it has folded the
// log and serves.
const plannerReady = "state rebuilt from the log"

// plannerProc is a running planner service: its /metrics URL, and the
// line in which it said it was ready (its own account of the start).
type plannerProc struct {
	*subproc.Proc
	metrics   string
	readyLine string
}

// waitPlannerCaughtUp waits until the planner service has folded the log
// as it ends now: its read position (drove_planner_read_position) at or
// past the end of every topic it reports. Its lag gauge is not enough: a
// pass that keeps the service from fetching leaves it at the last fetch's
// zero while the history is appended behind it.
func (w *world) waitPlannerCaughtUp(ctx context.Context, r *result, p *plannerProc) {
	ends, err := kafka.Ends(ctx, kafka.Config{Brokers: w.brokers, ClientID: "fleet-ends", Logger: w.quiet}, events.Topics()...)
	if err != nil {
		r.note(w.out, "planner_restart_s", "the log's ends: %v", err)
		return
	}
	want := map[string]float64{}
	for tp, end := range ends {
		want[tp.Topic] += float64(end)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if behind, seen := plannerBehind(p.metrics, want); seen && behind == 0 {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond): // polling a gauge, bounded by the deadline
		}
	}
	r.note(w.out, "planner_restart_s", "the running planner service had not folded the history within 10 minutes")
}

// plannerBehind sums, over the topics the planner reports a read position
// for, how far it is short of want; seen is false when it reports none
// (yet).
func plannerBehind(url string, want map[string]float64) (behind float64, seen bool) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, false
	}
	const metric = `drove_planner_read_position{topic="`
	for line := range strings.Lines(string(b)) {
		rest, ok := strings.CutPrefix(line, metric)
		if !ok {
			continue
		}
		topic, value, _ := strings.Cut(rest, `"}`)
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err == nil {
			behind, seen = behind+max(want[topic]-v, 0), true
		}
	}
	return behind, seen
}

func (w *world) rss(p *plannerProc, r *result, key string) float64 {
	mb, err := p.PeakRSSMiB()
	if err != nil {
		r.note(w.out, key, "%v", err)
	}
	return mb
}

// work measures the two plan latencies (dry runs, on the planner service
// alone), then runs the executors and the evacuation among them.
func (w *world) work(ctx context.Context, r *result, c *planner.Cluster) {
	var nodes []string
	for _, n := range c.Nodes[:w.cfg.executors] {
		nodes = append(nodes, n.Name)
	}
	watch, err := startWatcher(w.brokers)
	if err != nil {
		r.note(w.out, "plan_latency_evacuate_s", "watcher: %v", err)
		return
	}
	defer watch.stop()
	prod, err := kafka.NewProducer(kafka.Config{Brokers: w.brokers, ClientID: "fleet-requests",
		TransactionalID: "fleet-requests", Logger: w.quiet})
	if err != nil {
		r.note(w.out, "plan_latency_evacuate_s", "producer: %v", err)
		return
	}
	defer prod.Close()
	measureDryEvacuation(ctx, w.cfg, r, w.out, watch, prod, nodes[:w.cfg.evacuate])
	measureGroupChange(ctx, w.cfg, r, w.out, watch, prod, c)

	f, ok := w.startFleet(ctx, r, c, nodes)
	defer func() {
		if n := f.stop(); n > 0 {
			r.note(w.out, "executors", "%d executors had not stopped a minute after they were told to", n)
		}
	}()
	if !ok {
		return
	}
	ref, err := startReference(w.brokers)
	if err != nil {
		r.note(w.out, "executor_fetch_fraction", "reference reader: %v", err)
		return
	}
	defer ref.stop()
	measureEvacuation(ctx, w.cfg, r, w.out, watch, prod, f, ref)
	measureRestart(ctx, r, w.out, f)
	var errs int64
	for _, x := range f.execs {
		errs += x.errors.Load()
	}
	if errs > 0 {
		r.note(w.out, "executors", "%d errors logged by the executors, the first: %v", errs, firstError.Load())
	}
}

// startFleet starts the executors of nodes and notes how fast they
// started and the heap each holds.
func (w *world) startFleet(ctx context.Context, r *result, c *planner.Cluster, nodes []string) (*fleet, bool) {
	heap0 := heapInUse()
	began := time.Now()
	f, err := startExecutors(ctx, w.brokers, nodes, w.cfg.wave, 10*time.Minute)
	if err != nil {
		r.note(w.out, "executor_fetch_fraction", "executors did not start: %v", err)
		return f, false
	}
	took := time.Since(began).Seconds()
	perExec := (heapInUse() - heap0) / float64(len(nodes))
	starts := f.startTimes()
	fmt.Fprintf(w.out, "%d executors running (each its own Kafka clients, sim driver at 20x) in %.1fs; each started in %s; %.2f MiB of heap each\n",
		len(nodes), took, spread(starts), perExec)
	r.note(w.out, "executors", "%d executors in this process (-executors), on the first %d of %d nodes (the others have none), started %d at a time (-start-wave): all running in %.1fs on this %d-core machine, each from Run to running in %s (under the load of its wave's starts and the running fleet), %.2f MiB of Go heap each (in use, after GC, over the executors' count: a figure that scales)",
		len(nodes), len(nodes), len(c.Nodes), w.cfg.wave, took, runtime.NumCPU(), spread(starts), perExec)
	return f, true
}

// history appends progress events of finished moves until the log holds
// cfg.logEvents events: years of history, as the projector and the
// planner service (which folds drove.progress) read it.
func (w *world) history(ctx context.Context) error {
	n := int64(w.cfg.logEvents) - w.appended
	if n <= 0 {
		return nil
	}
	p, err := kafka.NewProducer(kafka.Config{Brokers: w.brokers, ClientID: "fleet-history",
		TransactionalID: "fleet-history", Logger: w.quiet})
	if err != nil {
		return err
	}
	defer p.Close()
	began := time.Now()
	at := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	const perTx, perMove = 1000, 20
	for done := int64(0); done < n; {
		k := min(int64(perTx), n-done)
		evs := make([]events.Envelope, k)
		for i := range evs {
			seq := done + int64(i)
			move, step := seq/perMove, seq%perMove
			req := fmt.Sprintf("history-%07d", move/10)
			at = at.Add(time.Second)
			evs[i] = events.New(events.Progress{Request: req, Job: int(move % 10), Index: 0,
				Instance: fmt.Sprintf("history-instance-%d", move%100_000), Node: "history-node",
				Phase: events.PhaseSync, State: events.ProgressRunning, Current: step << 20, Total: perMove << 20,
				ETASeconds: float64(perMove - step), BytesPerSecond: 1 << 20, Message: "syncing"},
				events.WithProducer("fleet-history"), events.WithTime(at),
				events.WithReason(events.Reason{Actor: "executor:history-node", Why: "history", RequestID: req}))
		}
		if err := p.Append(ctx, events.TopicProgress, evs...); err != nil {
			return fmt.Errorf("history: %w", err)
		}
		done += k
	}
	w.appended += n
	fmt.Fprintf(w.out, "appended %d events of history in %.1fs: the log holds %d\n", n, time.Since(began).Seconds(), w.appended)
	return nil
}

// executorRSS runs one `drove executor` on a node without one and reads
// its peak RSS once it has recovered and run for a few seconds.
func (w *world) executorRSS(ctx context.Context, r *result, c *planner.Cluster) {
	node := c.Nodes[w.cfg.executors].Name
	p, err := subproc.Start("executor", w.bin, []string{"executor", "--node", node, "--driver", "sim", "--plain-transfer",
		"--brokers", strings.Join(w.brokers, ",")}, nil, filepath.Join(w.tmp, "executor.log"), "executor running")
	if err == nil {
		_, err = p.Wait(ctx, "executor running", 10*time.Minute)
		if err != nil {
			p.Stop()
		}
	}
	if err != nil {
		r.note(w.out, "executor_rss_mb", "%v", err)
		return
	}
	select {
	case <-time.After(3 * time.Second): // a settled executor, following the log
	case <-ctx.Done():
	}
	mb, err := p.PeakRSSMiB()
	p.Stop()
	if err != nil {
		r.note(w.out, "executor_rss_mb", "%v", err)
		return
	}
	r.ExecutorRSSMB = f64(mb)
	r.note(w.out, "executor_rss_mb", "a `drove executor --driver sim` process of an idle node, after its start (it reads its own partition of drove.opcodes from its checkpoint, and drove.settings; no inventory)")
}

// heapInUse is this process's Go heap in use after a collection, in MiB.
func heapInUse() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapInuse) / (1 << 20)
}

// spread describes durations in seconds: median, 90th percentile and
// maximum.
func spread(s []float64) string {
	if len(s) == 0 {
		return "(none measured)"
	}
	s = slices.Sorted(slices.Values(s))
	at := func(q float64) float64 { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return fmt.Sprintf("%.2fs median, %.2fs p90, %.2fs max", at(0.5), at(0.9), s[len(s)-1])
}

// restartFields picks from the planner's ready line what says how it
// rebuilt its state: how long checking the topics and fencing took, from
// a snapshot or not, how long reading it took, the events read from the
// log, and the time from its first read to ready.
func restartFields(line string) string {
	var out []string
	for _, f := range strings.Fields(line) {
		for _, k := range []string{"prepare=", "snapshot=", "restore=", "events=", "took="} {
			if strings.HasPrefix(f, k) {
				out = append(out, f)
			}
		}
	}
	return strings.Join(out, " ")
}
