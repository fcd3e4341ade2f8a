package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/downtime"
	"github.com/drovehq/drove/planner/jobs"
	"github.com/drovehq/drove/planner/migration"
)

// Estimates (action=estimate) model RFD 34's incremental offline
// migration: a full send of the instance's data at the link's rate, then
// re-syncs of what the instance dirtied meanwhile, until the settings'
// re-sync rule says switch; the switch stops the instance, sends the last
// delta and starts it on the target. Its downtime is planner/downtime's
// model, the one the coordinator's budget reads: the overhead measured on
// earlier switches, the final delta at the link's rate, its checksum.
const (
	defaultLinkBytesPerSecond  = planner.DefaultLinkBytesPerSecond // when nothing was measured
	defaultDirtyBytesPerSecond = 1 << 20
	assumedBeginSeconds        = 5 // reserving the target
)

// estimate is an instance's estimate and the downtime prediction in it.
type estimate struct {
	wire.Estimate
	down downtime.Prediction
}

// basis is what the prediction keeps for the coordinator (the request's
// events.DowntimeBasis).
func (e estimate) basis() *events.DowntimeBasis {
	p := e.down.Parts
	return &events.DowntimeBasis{PredictedMS: e.down.Total().Milliseconds(), OverheadMS: p.Overhead.Milliseconds(),
		LinkBytesPerSecond: p.LinkBytesPerSecond, ChecksumBytesPerSecond: p.ChecksumBytesPerSecond}
}

// estimate is the estimate of moving in off its primary under settings s.
func (g *Gateway) estimate(ctx context.Context, in wire.Instance, s events.SettingsChanged) (estimate, error) {
	m, err := g.measure(ctx, []string{in.Name}, []string{in.Primary})
	if err != nil {
		return estimate{}, err
	}
	return estimateFrom(in, s, m), nil
}

// estimateFrom is the estimate of moving in off its primary under
// settings s from what m measured: the one model of a move before it
// runs, the estimate's and each move's of a dry run's plan. No I/O.
func estimateFrom(in wire.Instance, s events.SettingsChanged, m measured) estimate {
	var how []string
	data := in.DiskMiB << 20
	how = append(how, fmt.Sprintf("data: the instance's %d MiB of disks", in.DiskMiB))

	link, linkHow := m.linkRate(in.Primary)
	if s.SendMbpsLimit > 0 {
		if capped := int64(s.SendMbpsLimit * 1e6 / 8); capped < link {
			link = capped
			linkHow += fmt.Sprintf(", capped by send_mbps_limit %g Mbit/s", s.SendMbpsLimit)
		}
	}
	link = max(link, 1) // a cap under a byte a second would divide by zero
	how = append(how, linkHow)

	dirty, dirtyHow := m.dirtyRate(in.Name)
	how = append(how, dirtyHow)

	// The coordinator's own re-sync rule over the syncs the rates predict.
	B, D := float64(link), float64(dirty)
	sizes, delta := migration.Rehearse(float64(data), B, D, s)
	total, bytes, syncs := float64(assumedBeginSeconds), 0.0, len(sizes)
	for _, size := range sizes {
		total += size / B
		bytes += size
	}
	overhead, overheadHow := m.overhead(in)
	kind := events.StorageKind(in.Storage)
	finalDelta := int64(delta)
	if !kind.CopiedOnMove() {
		finalDelta = 0 // shared disks send none; the last memory pass is the overhead's
	}
	pred := downtime.Predict(downtime.Parts{Overhead: overhead, DeltaBytes: finalDelta, LinkBytesPerSecond: link,
		ChecksumBytesPerSecond: downtime.ChecksumRate(kind)})
	down := pred.Total().Seconds()
	total += down
	bytes += delta
	how = append(how, fmt.Sprintf("%d sync(s) by the re-sync rule, then a final delta of %.0f bytes; %d s assumed to begin",
		syncs, delta, assumedBeginSeconds), "downtime: "+pred.String()+"; "+overheadHow)
	return estimate{Estimate: wire.Estimate{
		TotalSeconds: math.Round(total), DowntimeSeconds: math.Round(down*1000) / 1000, Bytes: int64(bytes),
		How: strings.Join(how, "; "), DataBytes: data, LinkBytesPerS: link, DirtyBytesPerS: dirty,
		Syncs: syncs, SendMbpsLimit: s.SendMbpsLimit,
		Downtime: wire.DowntimeParts{OverheadMS: pred.Overhead.Milliseconds(), TransferMS: pred.Transfer.Milliseconds(),
			ChecksumMS: pred.Checksum.Milliseconds(), FinalDeltaBytes: int64(delta)},
	}, down: pred}
}

type payloadRow struct {
	Payload json.RawMessage `db:"payload"`
}

// requestEstimate estimates the jobs of p not yet ended; nil once none is
// ahead.
func (g *Gateway) requestEstimate(ctx context.Context, r wire.Request, p wire.PlanRow, rows []wire.Job, now time.Time) (*wire.RequestEstimate, error) {
	var specs []events.Job
	if err := json.Unmarshal(p.Jobs, &specs); err != nil {
		return nil, fmt.Errorf("gateway: the plan's jobs: %w", err)
	}
	done := make([]bool, len(specs))
	for _, j := range rows {
		if j.Index < len(done) && j.State != "waiting" && j.State != "running" {
			done[j.Index] = true
		}
	}
	var names []string
	ahead := 0
	for i, j := range specs {
		if !done[i] {
			ahead++
			for _, op := range j.Opcodes {
				names = append(names, op.Instance)
			}
		}
	}
	if ahead == 0 {
		return nil, nil
	}
	nodes, err := many[payloadRow](ctx, g.db, "node_links")
	if err != nil {
		return nil, err
	}
	linkOf := map[string]planner.Link{}
	for _, row := range nodes {
		var n events.NodeAnnounced
		if json.Unmarshal(row.Payload, &n) == nil {
			pn := planner.Node{SendBytesPerSecond: n.SendBytesPerSecond, ReceiveBytesPerSecond: n.ReceiveBytesPerSecond}
			linkOf[n.Name] = pn.LinkOf()
		}
	}
	links := func(n string) planner.Link {
		if l, ok := linkOf[n]; ok {
			return l
		}
		return planner.DefaultLinks(n)
	}
	ins, err := many[payloadRow](ctx, g.db, "instances_declared", names)
	if err != nil {
		return nil, err
	}
	declared := map[string]*events.InstanceDeclared{}
	for _, row := range ins {
		var in events.InstanceDeclared
		if json.Unmarshal(row.Payload, &in) == nil {
			declared[in.Name] = &in
		}
	}
	transfers := make([][]planner.Transfer, len(specs))
	for i := range specs {
		transfers[i] = jobs.JobTransfers(&specs[i], func(n string) *events.InstanceDeclared { return declared[n] })
	}
	lim := jobs.Limits{Cluster: assumedClusterLimit, PerNode: planner.DefaultOptions().MaxMovesPerNode}
	if r.MaxMovesPerNode > 0 {
		lim.PerNode = r.MaxMovesPerNode
	}
	est := jobs.EstimatePlan(specs, transfers, done, links, lim)
	return &wire.RequestEstimate{
		FinishSeconds: math.Round(est.FinishSeconds), LowerBoundSeconds: math.Round(est.LowerBound.Seconds),
		ExpectedFinishAt: now.Add(time.Duration(est.FinishSeconds * float64(time.Second))).UTC().Format(time.RFC3339),
		LowerBound:       est.LowerBound, Bytes: est.Bytes, JobsAhead: ahead,
		How: fmt.Sprintf("the %d jobs ahead (running ones from their start) released as the planner releases them, at most %d at once and %d per node; "+
			"each move's bytes (disks copied, memory sent live) at its share of its sending and receiving node's link (announced, else %d MiB/s)",
			ahead, lim.Cluster, lim.PerNode, planner.DefaultLinkBytesPerSecond>>20),
	}, nil
}

// assumedClusterLimit is the planner service's default MaxRunningMoves:
// the gateway does not know the service's configuration.
const assumedClusterLimit = 5
