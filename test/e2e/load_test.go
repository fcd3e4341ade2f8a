package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor/sim"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/clustergen"
	"github.com/drovehq/drove/test/bench/cli"
)

// Load held (issue 31): many clients at once through the whole system on
// the sim driver — 200 per-instance migrations and 2 evacuations, on
// distinct instances, sent at the same moment; 500 watch streams open
// the whole time; readers listing in a loop. Every request acknowledged
// with a 2xx must be in the log and end there; nothing is answered 5xx
// or refused; the watch streams stay open until their clients leave; and
// the process stays under loadRSSBound of memory.
//
// The memory is the process's resident set (VmRSS, sampled every 50 ms):
// the gateway shares the process with the planner, the projector and the
// executors, as `drove dev` runs them, so it bounds the gateway's from
// above. With DROVE_LOAD_JSON set, the figures go there as JSON and to
// stdout as a table (`make bench` writes test/bench/results/load.json).

const (
	loadNodes     = 10 // g1, each with loadPerNode instances; g2 as many empty nodes
	loadPerNode   = 25
	loadEvacuated = 2 // the last nodes of g1 are evacuated; the others' instances migrated one by one
	loadWatchers  = 500
	loadReaders   = 8
	// loadReadEvery paces each reader: 160 reads a second in all. Unpaced,
	// the readers took every CPU cycle the machine would give them, and
	// beside the other tests the run stretched, so they read for longer.
	loadReadEvery = 50 * time.Millisecond
	// loadRSSBound is the memory bound, MiB, under the race detector
	// (which multiplies memory several times).
	loadRSSBound = 3072
)

// loadResult is test/bench/results/load.json.
type loadResult struct {
	Acknowledged int     `json:"acknowledged"`
	Lost         int     `json:"lost"`
	Errors5xx    int     `json:"errors_5xx"`
	Refused      int     `json:"refused"`
	Watchers     int     `json:"watchers"`
	Reads        int     `json:"reads"`
	P50ReadMS    float64 `json:"p50_read_ms"`
	P99ReadMS    float64 `json:"p99_read_ms"`
	P50WriteMS   float64 `json:"p50_write_ms"`
	P99WriteMS   float64 `json:"p99_write_ms"`
	EndedS       float64 `json:"ended_s"`
	GatewayRSSMB float64 `json:"gateway_rss_mb"`
	RSSBoundMB   int     `json:"rss_bound_mb"`
	Memory       string  `json:"memory"`
}

func TestLoadHeld(t *testing.T) {
	seed := clustergen.TwoGroups(loadNodes, loadPerNode)
	// The evacuated nodes are drained first, as an operator would: else
	// the evacuation planned first may move instances onto the other
	// evacuated node before the other evacuation is accepted (the writes
	// queue for seconds), which then finds them held by the first (409).
	for i := loadNodes - loadEvacuated; i < loadNodes; i++ {
		seed.Nodes[i].Drained = true
	}
	e := startWith(t, func(c *allinone.Config) {
		c.Seed = func() *planner.Cluster { return seed }
		c.Sim.Clock = sim.InstantClock()
		c.MaxRunningMoves, c.MaxMovesPerNode, c.ExecutorConcurrency = 200, 20, 20
	}, "")
	// Many migrations per node at once, so they run side by side.
	e.settings(map[string]any{"max_running_migrations_per_node": 50})
	l := newLoad(e)
	rss := l.sampleRSS()

	// Each migration names its target, the next node of those not
	// evacuated: an instance migrated onto a node being evacuated would
	// make the evacuation wait for the migration's end (409).
	migrated := map[string]string{}
	for _, in := range seed.Instances {
		if movers := loadNodes - loadEvacuated; in.Primary < movers {
			migrated[in.Name] = seed.Nodes[(in.Primary+1)%movers].Name
		}
	}
	evacuated := []string{}
	for i := loadNodes - loadEvacuated; i < loadNodes; i++ {
		evacuated = append(evacuated, seed.Nodes[i].Name)
	}

	watchersDone := l.watch(seed.Instances)
	readersDone := l.read()
	start := time.Now()
	acks := l.write(migrated, evacuated)
	ended := l.awaitEnds(acks, 3*time.Minute)
	endedIn := time.Since(start)
	l.stop()
	readersDone()
	held := watchersDone()
	peak := rss()

	r := l.result(len(acks), held, peak, endedIn)
	if r.Acknowledged != len(migrated)+len(evacuated) || r.Refused > 0 {
		t.Errorf("%d of %d writes acknowledged, %d refused: %v", r.Acknowledged, len(migrated)+len(evacuated), r.Refused, l.refusals())
	}
	if r.Errors5xx > 0 {
		t.Errorf("%d answers were 5xx: %v", r.Errors5xx, l.refusals())
	}
	if !ended {
		t.Errorf("%d acknowledged requests did not end in the log", r.Lost)
	}
	if held != loadWatchers {
		t.Errorf("%d of %d watch streams held until their clients left", held, loadWatchers)
	}
	if r.GatewayRSSMB > loadRSSBound {
		t.Errorf("the process's resident set reached %.0f MiB, over the bound of %d", r.GatewayRSSMB, loadRSSBound)
	}
	l.report(r)
}

// load is the clients of TestLoadHeld.
type load struct {
	e      *env
	client *http.Client
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	reads     []time.Duration
	writes    []time.Duration
	server    int // 5xx answers
	refused   []string
	unmatched []string // acknowledged but not ended, after awaitEnds
}

func newLoad(e *env) *load {
	ctx, cancel := context.WithCancel(context.Background())
	e.t.Cleanup(cancel)
	// One connection per client at once: the default keeps 2 idle per
	// host, and 700 clients would open and close connections all the time.
	tr := &http.Transport{MaxIdleConnsPerHost: 1000, MaxConnsPerHost: 0}
	e.t.Cleanup(tr.CloseIdleConnections)
	return &load{e: e, client: &http.Client{Transport: tr}, ctx: ctx, cancel: cancel}
}

// stop ends the readers and the watchers.
func (l *load) stop() { l.cancel() }

// do sends one request and returns its status and body, counting a 5xx.
func (l *load) do(ctx context.Context, method, path, body string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, l.e.api.Base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 {
		l.mu.Lock()
		l.server++
		l.refused = append(l.refused, fmt.Sprintf("%s %s: %d %s", method, path, resp.StatusCode, b))
		l.mu.Unlock()
	}
	return resp.StatusCode, b, err
}

// ack is one acknowledged write: a migration's id or a request's.
type ack struct {
	migration bool
	id        string
}

// write sends every migration and evacuation at the same moment and
// returns those acknowledged.
func (l *load) write(migrated map[string]string, evacuated []string) []ack {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var acks []ack
	gate := make(chan struct{})
	send := func(migration bool, path, body string) {
		defer wg.Done()
		<-gate
		t0 := time.Now()
		status, b, err := l.do(l.ctx, http.MethodPost, path, body)
		l.mu.Lock()
		l.writes = append(l.writes, time.Since(t0))
		l.mu.Unlock()
		var ans struct{ Migration, Request string }
		if err == nil && status/100 == 2 && json.Unmarshal(b, &ans) == nil {
			mu.Lock()
			acks = append(acks, ack{migration: migration, id: ans.Migration + ans.Request})
			mu.Unlock()
			return
		}
		l.mu.Lock()
		l.refused = append(l.refused, fmt.Sprintf("POST %s: %d %s %v", path, status, b, err))
		l.mu.Unlock()
	}
	for name, target := range migrated {
		wg.Add(1)
		go send(true, "/v1/instances/"+name+"/migrate?action=automatic", `{"target":"`+target+`","reason":"load"}`)
	}
	for _, node := range evacuated {
		wg.Add(1)
		go send(false, "/v1/evacuations", `{"nodes":["`+node+`"],"mode":"all","reason":"load"}`)
	}
	close(gate)
	wg.Wait()
	return acks
}

// read lists in a loop from loadReaders clients, each paced by
// loadReadEvery, until stop; the returned
// function waits for them.
func (l *load) read() (wait func()) {
	paths := []string{"/v1/instances?limit=100", "/v1/nodes", "/v1/migrations?limit=50", "/v1/requests", "/v1/jobs?limit=100"}
	var wg sync.WaitGroup
	for i := range loadReaders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pace := time.NewTicker(loadReadEvery)
			defer pace.Stop()
			for k := i; l.ctx.Err() == nil; k++ {
				select {
				case <-l.ctx.Done():
					return
				case <-pace.C:
				}
				t0 := time.Now()
				status, b, err := l.do(l.ctx, http.MethodGet, paths[k%len(paths)], "")
				if l.ctx.Err() != nil {
					return
				}
				l.mu.Lock()
				l.reads = append(l.reads, time.Since(t0))
				if err != nil || status != http.StatusOK {
					l.refused = append(l.refused, fmt.Sprintf("GET %s: %d %s %v", paths[k%len(paths)], status, b, err))
				}
				l.mu.Unlock()
			}
		}()
	}
	return wg.Wait
}

// watch opens loadWatchers watch streams over the instances and returns
// a function that waits for them and says how many held: answered 200,
// sent lines, and stayed open until their clients left at stop.
func (l *load) watch(instances []planner.Instance) (wait func() int) {
	var wg sync.WaitGroup
	var held atomic.Int64
	var open sync.WaitGroup
	for i := range loadWatchers {
		wg.Add(1)
		open.Add(1)
		go func() {
			defer wg.Done()
			name := instances[i%len(instances)].Name
			if l.holdStream("/v1/instances/"+name+"/watch", open.Done) {
				held.Add(1)
			}
		}()
	}
	open.Wait() // every stream answered before the load starts
	return func() int { wg.Wait(); return int(held.Load()) }
}

// holdStream reads one watch stream until stop; opened is called once it
// answered (or failed to).
func (l *load) holdStream(path string, opened func()) bool {
	once := sync.OnceFunc(opened)
	defer once()
	req, err := http.NewRequestWithContext(l.ctx, http.MethodGet, l.e.api.Base+path, nil)
	if err != nil {
		return false
	}
	resp, err := l.client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	once()
	if resp.StatusCode != http.StatusOK {
		l.mu.Lock()
		l.refused = append(l.refused, fmt.Sprintf("GET %s: %d", path, resp.StatusCode))
		l.mu.Unlock()
		return false
	}
	buf := make([]byte, 4096)
	lines := 0
	for {
		n, err := resp.Body.Read(buf)
		lines += strings.Count(string(buf[:n]), "\n")
		if err != nil {
			// Held: the stream ended only because its client left.
			return l.ctx.Err() != nil && lines > 0
		}
	}
}

// awaitEnds follows the log until every acknowledged write is in it and
// ended: a migration's last state final, an evacuation finished or
// rejected. It records what did not, and says whether all did. One reader
// follows both topics: reading them whole again on every poll cost this
// test more CPU than the system under load did, on a machine shared with
// the other tests.
func (l *load) awaitEnds(acks []ack, within time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	r, err := kafka.NewReader(ctx, l.e.kcfg, kafka.ReadOptions{
		Topics: []string{events.TopicMigrations, events.TopicRequests}, Follow: true, MaxWait: time.Second})
	if err != nil {
		l.e.t.Fatal(err)
	}
	defer r.Close()
	seen := logged{asked: map[string]bool{}, ended: map[string]bool{}}
	for {
		b, err := r.Next(ctx)
		if ctx.Err() != nil {
			l.unmatched = seen.open(acks)
			return false
		}
		if err != nil && !kafka.IsRetryable(err) {
			l.e.t.Fatal(err)
		}
		recs, err := b.Decode()
		if err != nil {
			l.e.t.Fatal(err)
		}
		if seen.add(l.e.t, recs); b.CaughtUp && len(seen.open(acks)) == 0 {
			return true
		}
	}
}

// logged is what the log said of the load's writes so far.
type logged struct{ asked, ended map[string]bool }

func (g logged) add(t *testing.T, recs []kafka.Record) {
	for _, r := range recs {
		p, err := r.Event.DecodePayload()
		if err != nil {
			t.Fatal(err)
		}
		switch ev := p.(type) {
		case events.MigrationActionRequested:
			g.asked[ev.Migration] = true
		case events.MigrationStateChanged:
			final := ev.State == events.MigrationSuccessful || ev.State == events.MigrationFailed || ev.State == events.MigrationAborted
			g.ended[ev.Migration] = final
		case events.EvacuationRequested:
			g.asked[ev.Request] = true
		case events.RequestFinished:
			g.ended[ev.Request] = true
		case events.RequestRejected:
			g.ended[ev.Request] = true
		}
	}
}

// open lists the acknowledged writes the log does not show ended.
func (g logged) open(acks []ack) []string {
	var open []string
	for _, a := range acks {
		if !g.asked[a.id] || !g.ended[a.id] {
			open = append(open, fmt.Sprintf("%s (in the log: %t)", a.id, g.asked[a.id]))
		}
	}
	return open
}

// sampleRSS samples the process's resident set every 50 ms until the
// returned function is called, which gives the peak in MiB.
func (l *load) sampleRSS() (peak func() float64) {
	var max atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if kb := rssKiB(); kb > max.Load() {
				max.Store(kb)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() float64 {
		close(done)
		<-stopped
		return float64(max.Load()) / 1024
	}
}

// rssKiB is VmRSS of /proc/self/status, 0 where there is none.
func rssKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

func (l *load) refusals() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.refused[:min(len(l.refused), 10)]
}

func (l *load) result(acknowledged, watchers int, rssMiB float64, ended time.Duration) loadResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	return loadResult{
		Acknowledged: acknowledged, Lost: len(l.unmatched), Errors5xx: l.server, Refused: len(l.refused) - l.server,
		Watchers: watchers, Reads: len(l.reads),
		P50ReadMS: quantileMS(l.reads, 0.50), P99ReadMS: quantileMS(l.reads, 0.99),
		P50WriteMS: quantileMS(l.writes, 0.50), P99WriteMS: quantileMS(l.writes, 0.99),
		EndedS: ended.Seconds(), GatewayRSSMB: rssMiB, RSSBoundMB: loadRSSBound,
		Memory: "peak VmRSS of the one process running gateway, planner, projector and executors",
	}
}

func quantileMS(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[min(len(s)-1, int(q*float64(len(s))))].Microseconds()) / 1000
}

// report logs the figures, and with DROVE_LOAD_JSON writes them there and
// prints them as a table.
func (l *load) report(r loadResult) {
	t := l.e.t
	t.Logf("load: %+v", r)
	if len(l.unmatched) > 0 {
		t.Logf("not ended: %v", l.unmatched[:min(len(l.unmatched), 10)])
	}
	out := os.Getenv("DROVE_LOAD_JSON")
	if out == "" {
		return
	}
	if err := cli.WriteJSON(out, r); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("\n%-44s %10s\n", "load held (sim driver, whole system)", "")
	for _, row := range []struct {
		name string
		v    string
	}{
		{"writes acknowledged (migrations, evacuations)", strconv.Itoa(r.Acknowledged)},
		{"acknowledged but not ended in the log", strconv.Itoa(r.Lost)},
		{"answers 5xx", strconv.Itoa(r.Errors5xx)},
		{"watch streams held", strconv.Itoa(r.Watchers)},
		{"reads", strconv.Itoa(r.Reads)},
		{"read p50 / p99, ms", fmt.Sprintf("%.1f / %.1f", r.P50ReadMS, r.P99ReadMS)},
		{"write p50 / p99, ms", fmt.Sprintf("%.1f / %.1f", r.P50WriteMS, r.P99WriteMS)},
		{"all ended after, s", fmt.Sprintf("%.1f", r.EndedS)},
		{"peak RSS, MiB (bound)", fmt.Sprintf("%.0f (%d)", r.GatewayRSSMB, r.RSSBoundMB)},
	} {
		fmt.Printf("%-44s %10s\n", row.name, row.v)
	}
	fmt.Printf("written to %s\n", out)
}
