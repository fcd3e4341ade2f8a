package executor

import (
	"context"
	"sync"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// inventory folds drove.inventory into what opcodes need: each instance's
// facts and placement, and each node's group, of the whole cluster,
// because a move onto this node may bring any instance and name any node
// (doc.go, Placement). It remembers the last offset applied per partition
// and ignores what it has already seen: replaying an older record would
// briefly move an instance back in time.
type inventory struct {
	mu        sync.Mutex
	applied   map[int32]int64
	nodes     map[string]string // node → group
	instances map[string]instanceFacts
	changed   chan struct{} // closed and replaced on every change
}

type instanceFacts struct {
	Size      events.Size
	Storage   events.StorageKind
	RunState  events.RunState
	Primary   string
	Secondary string
}

func newInventory() *inventory {
	return &inventory{
		applied:   map[int32]int64{},
		nodes:     map[string]string{},
		instances: map[string]instanceFacts{},
		changed:   make(chan struct{}),
	}
}

// apply folds one drove.inventory record. Types the executor does not need
// (groups) are skipped: the strict decoding already happened in the
// reader, so skipping here loses nothing.
func (inv *inventory) apply(rec kafka.Record) error {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if last, ok := inv.applied[rec.Partition]; ok && rec.Offset <= last {
		return nil
	}
	inv.applied[rec.Partition] = rec.Offset
	p, err := rec.Event.DecodePayload()
	if err != nil {
		return err
	}
	switch v := p.(type) {
	case events.NodeAnnounced:
		inv.nodes[v.Name] = v.Group
	case events.NodeUpdated:
		inv.nodes[v.Name] = v.Group
	case events.InstanceDeclared:
		inv.instances[v.Name] = instanceFacts{
			Size: v.Size, Storage: v.Storage, RunState: v.RunState,
			Primary: v.PrimaryNode, Secondary: v.SecondaryNode,
		}
	case events.InstancePlaced:
		f := inv.instances[v.Instance]
		f.Primary, f.Secondary = v.PrimaryNode, v.SecondaryNode
		inv.instances[v.Instance] = f
	default:
		return nil
	}
	close(inv.changed)
	inv.changed = make(chan struct{})
	return nil
}

// placement is a snapshot of what one opcode needs from the inventory.
type placement struct {
	facts  instanceFacts
	groups map[string]string // node → group, for the nodes involved
}

// await returns the instance's facts once the inventory knows the instance
// with primary as its primary and knows the groups of nodes. The planner
// dispatches an opcode only after the previous one's InstancePlaced is in
// the log, but this executor may not have read it yet; waiting up to max
// closes that gap. After max it returns what it has and whether it is
// consistent, so the caller can decide; it fails only if ctx ends.
func (inv *inventory) await(ctx context.Context, instance, primary string, nodes []string, max time.Duration) (placement, bool, error) {
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	for {
		inv.mu.Lock()
		f, known := inv.instances[instance]
		pl := placement{facts: f, groups: map[string]string{}}
		ok := known && f.Primary == primary
		for _, n := range append(nodes, f.Primary, f.Secondary) {
			if n == "" {
				continue
			}
			g, has := inv.nodes[n]
			if has {
				pl.groups[n] = g
			} else if n != f.Secondary { // a previous secondary's group is not needed
				ok = false
			}
		}
		changed := inv.changed
		inv.mu.Unlock()
		if ok {
			return pl, true, nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return pl, false, nil
		case <-ctx.Done():
			return pl, false, ctx.Err()
		}
	}
}

// known reports whether the inventory has declared instance.
func (inv *inventory) known(instance string) bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	_, ok := inv.instances[instance]
	return ok
}
