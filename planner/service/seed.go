package service

import (
	"context"
	"fmt"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/planner"
)

// InventoryEvents states a cluster as inventory events: GroupDeclared for
// every group, NodeAnnounced for every node, InstanceDeclared for every
// instance, in the cluster's order. It is the reverse of the service's fold
// (up to what events carry: groups' instance policies and nodes' reserved
// memory are, and the cluster's tags ride on every group),
// and is how `drove seed` imports a cluster, a Ganeti IAllocator file
// included (planner/iallocator.DecodeCluster).
//
// Event times increase by a nanosecond from one event to the next, so the
// fold, which orders objects by the time they first appear, keeps the
// cluster's order however the topic's partitions are interleaved.
func InventoryEvents(c *planner.Cluster, reason events.Reason) []events.Envelope {
	base := time.Now().UTC()
	var out []events.Envelope
	opts := func() []events.Option {
		return []events.Option{events.WithReason(reason), events.WithProducer("drove-seed"),
			events.WithTime(base.Add(time.Duration(len(out))))}
	}
	for _, g := range c.Groups {
		out = append(out, events.New(events.GroupDeclared{
			Name: g.Name, AllocPolicy: events.AllocPolicy(g.AllocPolicy), Tags: g.Tags,
			Policy: policyEvent(g.Policy), ClusterTags: c.Tags,
		}, opts()...))
	}
	for _, n := range c.Nodes {
		group := ""
		if n.Group >= 0 && n.Group < len(c.Groups) {
			group = c.Groups[n.Group].Name
		}
		out = append(out, events.New(events.NodeAnnounced{
			Name: n.Name, Group: group,
			Total: events.Resources{MemoryMiB: n.TotalMemory, DiskMiB: n.TotalDisk,
				CPUs: int(n.TotalCPUs), Spindles: int(n.TotalSpindles)},
			Free: events.Resources{MemoryMiB: max(n.FreeMemory, 0), DiskMiB: max(n.FreeDisk, 0),
				CPUs: int(max(n.TotalCPUs-n.ReservedCPUs, 0)), Spindles: int(max(n.FreeSpindles, 0))},
			ReservedMemoryMiB:  max(n.ReservedMemory, 0),
			SendBytesPerSecond: max(n.SendBytesPerSecond, 0), ReceiveBytesPerSecond: max(n.ReceiveBytesPerSecond, 0),
			Offline: n.Offline, Drained: n.Drained, VMCapable: n.VMCapable, Tags: n.Tags,
		}, opts()...))
	}
	states := map[planner.RunState]events.RunState{
		planner.Up: events.RunRunning, planner.Down: events.RunStopped, planner.Offline: events.RunOffline,
	}
	for _, in := range c.Instances {
		d := events.InstanceDeclared{
			Name: in.Name, Owner: in.Owner, Storage: events.StorageKind(in.Storage),
			RunState: states[in.State], Tags: in.Tags,
			Size: events.Size{MemoryMiB: in.Memory, VCPUs: int(in.VCPUs), Spindles: int(in.SpindleUse)},
		}
		if d.Owner == "" {
			d.Owner = "unknown" // Ganeti has no owners; the schema requires one
		}
		if d.RunState == "" {
			d.RunState = events.RunRunning
		}
		for _, disk := range in.Disks {
			d.Size.DisksMiB = append(d.Size.DisksMiB, disk.Size)
		}
		if len(in.Disks) == 0 && in.DiskSpace > 0 {
			d.Size.DisksMiB = []int64{in.DiskSpace}
		}
		if in.Primary >= 0 && in.Primary < len(c.Nodes) {
			d.PrimaryNode = c.Nodes[in.Primary].Name
		}
		if in.Storage.Mirroring() == planner.MirroredInternally && in.Secondary >= 0 && in.Secondary < len(c.Nodes) {
			d.SecondaryNode = c.Nodes[in.Secondary].Name
		}
		// Only the count of NICs matters to the planner (the instance
		// policy bounds it); Ganeti's MACs are not in its IAllocator input.
		d.NICs = make([]events.NIC, in.NICs)
		out = append(out, events.New(d, opts()...))
	}
	return out
}

// seedBatch bounds the events of one seeding transaction.
const seedBatch = 500

// Seed appends envs, grouped by topic in their order, in transactions of
// at most 500 events. Each batch is atomic; a failure leaves the batches
// before it in the log, and seeding again restates the same objects, which
// the whole-state inventory events make harmless.
func Seed(ctx context.Context, p *kafka.Producer, envs []events.Envelope) error {
	byTopic := map[string][]events.Envelope{}
	var topics []string
	for i, e := range envs {
		t, err := e.Topic()
		if err != nil {
			return fmt.Errorf("seed: event %d: %w", i, err)
		}
		if _, ok := byTopic[t]; !ok {
			topics = append(topics, t)
		}
		byTopic[t] = append(byTopic[t], e)
	}
	for _, t := range topics {
		evs := byTopic[t]
		for len(evs) > 0 {
			n := min(len(evs), seedBatch)
			if err := p.Append(ctx, t, evs[:n]...); err != nil {
				return fmt.Errorf("seed %s: %w", t, err)
			}
			evs = evs[n:]
		}
	}
	return nil
}
