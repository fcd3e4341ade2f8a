package gateway

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/drovehq/drove/events"
)

// Estimates (action=estimate) model RFD 34's incremental offline
// migration: a full send of the instance's data at the link's rate, then
// re-syncs of what the instance dirtied meanwhile, until the settings'
// re-sync rule says switch; the switch stops the instance, sends the last
// delta and starts it on the target.
const (
	defaultLinkBytesPerSecond  = 100 << 20 // ~ 1 Gbit/s less overhead, when nothing was measured
	defaultDirtyBytesPerSecond = 1 << 20
	assumedBeginSeconds        = 5  // reserving the target
	assumedStopStartSeconds    = 20 // stopping on the source and starting on the target
	rateSamples                = 50
)

// estimate is the answer to action=estimate.
type estimate struct {
	TotalSeconds    float64 `json:"total_seconds"`
	DowntimeSeconds float64 `json:"downtime_seconds"`
	Bytes           int64   `json:"bytes"`
	// How says where each input came from.
	How            string  `json:"how"`
	DataBytes      int64   `json:"data_bytes"`
	LinkBytesPerS  int64   `json:"link_bytes_per_second"`
	DirtyBytesPerS int64   `json:"dirty_bytes_per_second"`
	Syncs          int     `json:"syncs"`
	SendMbpsLimit  float64 `json:"send_mbps_limit,omitempty"`
}

type linkRate struct {
	Node           string `db:"node"`
	BytesPerSecond int64  `db:"bytes_per_second"`
}

type syncPhase struct {
	Request  string  `db:"request"`
	Index    int     `db:"idx"`
	FirstSeq int64   `db:"first_seq"`
	Bytes    int64   `db:"bytes"`
	Seconds  float64 `db:"seconds"`
}

func (g *Gateway) estimate(ctx context.Context, in instance, s events.SettingsChanged) (estimate, error) {
	var how []string
	data := in.DiskMiB << 20
	how = append(how, fmt.Sprintf("data: the instance's %d MiB of disks", in.DiskMiB))

	link, linkHow, err := g.linkRate(ctx, in.Primary)
	if err != nil {
		return estimate{}, err
	}
	if s.SendMbpsLimit > 0 {
		if capped := int64(s.SendMbpsLimit * 1e6 / 8); capped < link {
			link = capped
			linkHow += fmt.Sprintf(", capped by send_mbps_limit %g Mbit/s", s.SendMbpsLimit)
		}
	}
	how = append(how, linkHow)

	dirty, dirtyHow, err := g.dirtyRate(ctx, in.Name)
	if err != nil {
		return estimate{}, err
	}
	how = append(how, dirtyHow)

	// The re-sync rule: sync until the delta is under ResyncMaxBytes, or
	// ResyncMaxSyncs syncs ran, or the delta stopped shrinking.
	B, D := float64(link), float64(dirty)
	t := float64(data) / B
	total := assumedBeginSeconds + t
	bytes := float64(data)
	syncs := 1
	delta := D * t
	for syncs < s.ResyncMaxSyncs && delta >= float64(s.ResyncMaxBytes) && D < B {
		t = delta / B
		total += t
		bytes += delta
		syncs++
		delta = D * t
	}
	down := assumedStopStartSeconds + delta/B
	total += down
	bytes += delta
	how = append(how, fmt.Sprintf("%d sync(s) by the re-sync rule, then a final delta of %.0f bytes; %d s assumed to begin, %d s to stop and start",
		syncs, delta, assumedBeginSeconds, assumedStopStartSeconds))
	return estimate{
		TotalSeconds: math.Round(total), DowntimeSeconds: math.Round(down), Bytes: int64(bytes),
		How: strings.Join(how, "; "), DataBytes: data, LinkBytesPerS: link, DirtyBytesPerS: dirty,
		Syncs: syncs, SendMbpsLimit: s.SendMbpsLimit,
	}, nil
}

// linkRate is the median rate of recent sends, the source node's own
// when it sent any.
func (g *Gateway) linkRate(ctx context.Context, node string) (int64, string, error) {
	rs, err := many[linkRate](ctx, g.db, "link_rates", node, rateSamples)
	if err != nil {
		return 0, "", err
	}
	if len(rs) == 0 {
		return defaultLinkBytesPerSecond, fmt.Sprintf("link: no send measured yet, assumed %d MiB/s", defaultLinkBytesPerSecond>>20), nil
	}
	var own, any []int64
	for _, r := range rs {
		any = append(any, r.BytesPerSecond)
		if r.Node == node {
			own = append(own, r.BytesPerSecond)
		}
	}
	if len(own) > 0 {
		return median(own), fmt.Sprintf("link: median of the last %d rates measured sending from %s", len(own), node), nil
	}
	return median(any), fmt.Sprintf("link: median of the last %d rates measured on any node (none from %s)", len(any), node), nil
}

// dirtyRate is how fast the instance wrote during its past syncs: the
// bytes of sync k+1 over the duration of sync k, averaged.
func (g *Gateway) dirtyRate(ctx context.Context, name string) (int64, string, error) {
	ps, err := many[syncPhase](ctx, g.db, "sync_phases", name)
	if err != nil {
		return 0, "", err
	}
	byReq := map[string][]syncPhase{}
	for _, p := range ps {
		byReq[p.Request] = append(byReq[p.Request], p)
	}
	var sum float64
	n := 0
	for _, xs := range byReq {
		slices.SortFunc(xs, func(a, b syncPhase) int { return a.Index - b.Index })
		for i := 0; i+1 < len(xs); i++ {
			if xs[i].Seconds > 0 {
				sum += float64(xs[i+1].Bytes) / xs[i].Seconds
				n++
			}
		}
	}
	if n == 0 {
		return defaultDirtyBytesPerSecond, fmt.Sprintf("dirty rate: no re-sync of this instance measured yet, assumed %d MiB/s", defaultDirtyBytesPerSecond>>20), nil
	}
	return int64(sum / float64(n)), fmt.Sprintf("dirty rate: measured over %d re-sync(s) of this instance's past migrations", n), nil
}

func median(xs []int64) int64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}
