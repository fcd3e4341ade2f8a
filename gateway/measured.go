package gateway

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
	"github.com/drovehq/drove/planner/downtime"
)

// What earlier moves measured, the inputs of every downtime prediction
// the gateway makes: the rates of recent sends, the overheads of recent
// switches, the sync phases of the instances' past moves. It is read in
// three queries for any number of instances and nodes, so an estimate
// (one instance) and a dry run's plan (thousands of moves) read it the
// same way and cost the same number of round trips.

const (
	rateSamples          = 50
	rateWindow           = 2000 // the latest progress events read for link rates
	syncPhasesOfInstance = 200  // the newest sync phases read per instance
)

type linkRate struct {
	Node           string `db:"node"`
	BytesPerSecond int64  `db:"bytes_per_second"`
}

type switchOverhead struct {
	Instance   string `db:"instance"`
	Node       string `db:"node"`
	OverheadMS int64  `db:"overhead_ms"`
}

type syncPhase struct {
	Instance string  `db:"instance"`
	Request  string  `db:"request"`
	Index    int     `db:"idx"`
	FirstSeq int64   `db:"first_seq"`
	Bytes    int64   `db:"bytes"`
	Started  float64 `db:"started"` // seconds since the epoch
}

// measured is what was measured for a set of instances and source nodes;
// each list is newest first.
type measured struct {
	rates     []linkRate
	overheads []switchOverhead
	syncs     map[string][]syncPhase // by instance
}

// measure reads what was measured for instances moving off nodes.
func (g *Gateway) measure(ctx context.Context, instances, nodes []string) (measured, error) {
	var m measured
	var err error
	if m.rates, err = many[linkRate](ctx, g.db, "link_rates", rateWindow); err != nil {
		return m, err
	}
	if m.overheads, err = many[switchOverhead](ctx, g.db, "switch_overheads", instances, nodes, rateSamples); err != nil {
		return m, err
	}
	ps, err := many[syncPhase](ctx, g.db, "sync_phases", instances, syncPhasesOfInstance)
	if err != nil {
		return m, err
	}
	m.syncs = map[string][]syncPhase{}
	for _, p := range ps {
		m.syncs[p.Instance] = append(m.syncs[p.Instance], p)
	}
	return m, nil
}

// linkRate is the median rate of recent sends (among the latest
// rateWindow progress events), the source node's own when it sent any.
func (m measured) linkRate(node string) (int64, string) {
	xs, own := newestOf(m.rates, func(r linkRate) bool { return r.Node == node },
		func(r linkRate) int64 { return r.BytesPerSecond })
	switch {
	case own:
		return median(xs), fmt.Sprintf("link: median of the last %d rates measured sending from %s", len(xs), node)
	case len(xs) > 0:
		return median(xs), fmt.Sprintf("link: median of the last %d rates measured on any node (none from %s)", len(xs), node)
	}
	return defaultLinkBytesPerSecond, fmt.Sprintf("link: no send measured yet, assumed %d MiB/s", defaultLinkBytesPerSecond>>20)
}

// overhead is a switch's fixed cost, stop and start, as the median of
// recent switches measured it: the instance's own when it has any, since
// they were of the same runtime and the same workload; else those from
// its source node; else any node's. With none measured,
// planner/downtime's stated default for its kind.
func (m measured) overhead(in wire.Instance) (time.Duration, string) {
	ms := func(x int64) time.Duration { return time.Duration(x) * time.Millisecond }
	val := func(d switchOverhead) int64 { return d.OverheadMS }
	if own, ok := newestOf(m.overheads, func(d switchOverhead) bool { return d.Instance == in.Name }, val); ok {
		return ms(median(own)), fmt.Sprintf("overhead: median of the last %d switches of %s", len(own), in.Name)
	}
	node := in.Primary
	xs, fromNode := newestOf(m.overheads, func(d switchOverhead) bool { return d.Node == node }, val)
	switch {
	case fromNode:
		return ms(median(xs)), fmt.Sprintf("overhead: median of the last %d switches measured from %s", len(xs), node)
	case len(xs) > 0:
		return ms(median(xs)), fmt.Sprintf("overhead: median of the last %d switches measured on any node (none from %s)", len(xs), node)
	}
	d, why := downtime.DefaultOverhead(events.StorageKind(in.Storage), events.RunState(in.RunState))
	return d, "overhead: " + why
}

// newestOf is the values of the newest rateSamples samples that are
// mine, when there are any (own); else of the newest rateSamples of all.
func newestOf[T any](samples []T, mine func(T) bool, val func(T) int64) (xs []int64, own bool) {
	var all []int64
	for _, s := range samples {
		if mine(s) && len(xs) < rateSamples {
			xs = append(xs, val(s))
		}
		if len(all) < rateSamples {
			all = append(all, val(s))
		}
	}
	if len(xs) > 0 {
		return xs, true
	}
	return all, false
}

// dirtyRate is how fast the instance wrote during its past syncs: the
// bytes of sync k+1 over the time from sync k's start to its own, when
// each took its snapshot, averaged. Sync k's own duration is not that
// time: a move may do other work between two syncs (a checksum ahead of
// the switch, 7 s of a 1 GiB disk), and the bytes written meanwhile
// over a 0.2 s sync read as a dirty rate of 200 MB/s, which made the
// estimate rehearse five syncs and a 10 MB final delta for an instance
// writing 5 MB/s.
func (m measured) dirtyRate(name string) (int64, string) {
	byReq := map[string][]syncPhase{}
	for _, p := range m.syncs[name] {
		byReq[p.Request] = append(byReq[p.Request], p)
	}
	var sum float64
	n := 0
	for _, xs := range byReq {
		slices.SortFunc(xs, func(a, b syncPhase) int { return a.Index - b.Index })
		for i := 0; i+1 < len(xs); i++ {
			if gap := xs[i+1].Started - xs[i].Started; gap > 0 {
				sum += float64(xs[i+1].Bytes) / gap
				n++
			}
		}
	}
	if n == 0 {
		return defaultDirtyBytesPerSecond, fmt.Sprintf("dirty rate: no re-sync of this instance measured yet, assumed %d MiB/s", defaultDirtyBytesPerSecond>>20)
	}
	return int64(sum / float64(n)), fmt.Sprintf("dirty rate: measured over %d re-sync(s) of this instance's past migrations", n)
}

// median of an even count is the mean of the two middle values: of two
// switches' overheads, 126 and 183 ms, the upper one alone predicted 184
// ms for a third switch that took 126.
func median(xs []int64) int64 {
	xs = slices.Sorted(slices.Values(xs))
	return (xs[(len(xs)-1)/2] + xs[len(xs)/2]) / 2
}
