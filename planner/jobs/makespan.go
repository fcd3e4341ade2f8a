package jobs

import (
	"cmp"
	"maps"
	"slices"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
	"github.com/drovehq/drove/planner/inventory"
)

// Release for the shortest makespan. A plan's dependencies keep it safe
// in any order (planner/schedule.go); within them, and within the
// operator's caps, the queue picks which ready jobs run first:
//
//   - the node with the most sending left first (its backlog: the
//     estimated seconds of its unreleased moves), so that no sending link
//     is left with a long tail while others idle;
//   - within a node, the longest move first (LPT), so that the end of the
//     evacuation is made of short moves that fill the gaps;
//   - a move only where its links have room: released next to the moves
//     already running (their rates shared as planner.ShareLinks shares
//     them), it must get at least half the rate it would get alone. A
//     move that would only split a busy link waits, and its slot goes to
//     one whose links are idle. This is also how `auto` chooses a node's
//     concurrency: as many moves as its link carries.
//
// The durations are estimates: a move's bytes (MoveBytes) over the slower
// of its two links.

// Limits are the operator's caps on running jobs.
type Limits struct {
	// Cluster bounds the jobs running at once, all requests together.
	Cluster int
	// PerNode bounds the jobs one node sends at once; 0 is auto: as many
	// as the node's link has room for.
	PerNode int
	// IndexOrder releases ready jobs in plan order within the caps, with
	// no estimate: Drove's rule before release aimed at the makespan, kept
	// as the benchmark's baseline.
	IndexOrder bool
}

// Candidate is a ready job as the release decision sees it.
type Candidate struct {
	Job     int
	Senders []string
	// Flow is the job's largest transfer: what its links carry.
	Flow planner.Transfer
	// Seconds is the job's estimated duration alone on its links.
	Seconds float64
}

// Running is a job running now, in any request.
type Running struct {
	Senders []string
	Flow    planner.Transfer
	// Rate is what its executor last measured, bytes per second; 0 until
	// it reports one (the model's share of its links stands in).
	Rate float64
}

// minShare is the part of a move's own rate its links must still have
// for it to be released next to the moves running.
const minShare = 0.5

// Choose returns the candidates to release now, in release order (as
// indices into cands). backlog is each sending node's estimated seconds of
// sending left in the request.
func Choose(cands []Candidate, running []Running, backlog map[string]float64, lim Limits, links planner.Links) []int {
	perNode := map[string]int{}
	var flows []planner.Transfer
	for _, r := range running {
		for _, n := range r.Senders {
			perNode[n]++
		}
		if r.Flow.Bytes > 0 {
			flows = append(flows, r.Flow)
		}
	}
	sendUsed, recvUsed := linksInUse(running, flows, links)
	left := maps.Clone(backlog) // less what this pass releases
	total := len(running)
	taken := make([]bool, len(cands))
	var out []int
	for lim.Cluster <= 0 || total < lim.Cluster {
		best := -1
		for i := range cands {
			c := &cands[i]
			if taken[i] {
				continue
			}
			if lim.PerNode > 0 && slices.ContainsFunc(c.Senders, func(n string) bool { return perNode[n] >= lim.PerNode }) {
				continue
			}
			if !lim.IndexOrder && c.Flow.Bytes > 0 && room(c.Flow, links, sendUsed, recvUsed) < minShare*c.Flow.Cap(links) {
				continue // would only split a busy link
			}
			if best < 0 || (!lim.IndexOrder && before(c, &cands[best], left)) {
				best = i
			}
			if lim.IndexOrder {
				break // the first that fits, in plan order
			}
		}
		if best < 0 {
			break
		}
		c := &cands[best]
		taken[best] = true
		out = append(out, best)
		total++
		for _, n := range c.Senders {
			perNode[n]++
		}
		if f := c.Flow; f.Bytes > 0 {
			rate := min(room(f, links, sendUsed, recvUsed), f.Cap(links))
			sendUsed[f.From] += rate
			recvUsed[f.To] += rate
		}
		left[c.Flow.From] -= c.Seconds
	}
	return out
}

// linksInUse is what the running moves take of each link: what their
// executors measured, else their share by the model. A link slower than
// announced shows in the measured rates, and leaves no room it does not
// have.
func linksInUse(running []Running, flows []planner.Transfer, links planner.Links) (send, recv map[string]float64) {
	send, recv = map[string]float64{}, map[string]float64{}
	model := planner.ShareLinks(flows, links)
	k := 0
	for _, r := range running {
		if r.Flow.Bytes <= 0 {
			continue
		}
		rate := model[k]
		k++
		if r.Rate > 0 {
			rate = r.Rate
		}
		send[r.Flow.From] += rate
		recv[r.Flow.To] += rate
	}
	return send, recv
}

// room is what a transfer's two links have left beside the rates in use.
func room(f planner.Transfer, links planner.Links, sendUsed, recvUsed map[string]float64) float64 {
	return min(float64(links(f.From).Send)-sendUsed[f.From], float64(links(f.To).Receive)-recvUsed[f.To])
}

// before orders candidates: the sender with the most left first, then
// the longest move, then plan order.
func before(a, b *Candidate, left map[string]float64) bool {
	if c := cmp.Compare(left[a.Flow.From], left[b.Flow.From]); c != 0 {
		return c > 0
	}
	if c := cmp.Compare(a.Seconds, b.Seconds); c != 0 {
		return c > 0
	}
	return a.Job < b.Job
}

// MoveBytes is what an opcode sends over the network, as the drivers
// move each storage kind: a replica's disks for replace-disks, the disks
// of kinds copied on a move (RFD 34, an offline switch), the memory of a
// running instance migrated live; a failover sends nothing. in nil (not in
// the inventory) sends nothing.
func MoveBytes(op events.Opcode, in *events.InstanceDeclared) int64 {
	if in == nil {
		return 0
	}
	disks := inventory.DiskTotal(in.Size) << 20
	switch op.OpID {
	case events.OpInstanceReplaceDisks:
		return disks
	case events.OpInstanceMigrate:
		if in.Storage.CopiedOnMove() {
			return disks
		}
		if in.RunState == events.RunRunning {
			return in.Size.MemoryMiB << 20
		}
	}
	return 0
}

// JobTransfers are the transfers of a job's opcodes, in order.
func JobTransfers(j *events.Job, instance func(string) *events.InstanceDeclared) []planner.Transfer {
	var out []planner.Transfer
	for _, op := range j.Opcodes {
		out = append(out, planner.Transfer{From: op.From, To: op.To, Bytes: MoveBytes(op, instance(op.Instance))})
	}
	return out
}

// candidate describes a job by its transfers.
func candidate(job int, j *events.Job, ts []planner.Transfer, links planner.Links) Candidate {
	c := Candidate{Job: job, Senders: Senders(j)}
	for _, t := range ts {
		c.Seconds += t.Seconds(links)
		if t.Bytes > c.Flow.Bytes || c.Flow.From == "" {
			c.Flow = t
		}
	}
	return c
}

// LinksOf reads the nodes' links from the inventory, with the default for
// a node that announced none (or is unknown).
func LinksOf(inv *inventory.Inventory) planner.Links {
	return func(name string) planner.Link {
		n := inv.Nodes[name]
		if n == nil {
			return planner.DefaultLinks(name)
		}
		pn := planner.Node{SendBytesPerSecond: n.SendBytesPerSecond, ReceiveBytesPerSecond: n.ReceiveBytesPerSecond}
		return pn.LinkOf()
	}
}

// runningMoves lists the jobs running now in every request, each by the
// transfer of the opcode it is at.
func (s *State) runningMoves(instance func(string) *events.InstanceDeclared) []Running {
	var out []Running
	for _, id := range s.order {
		r := s.requests[id]
		if r.kind != "" && !r.active() {
			continue
		}
		for i, j := range r.jobs {
			spec := r.planJob(i)
			if !j.running() || spec == nil {
				continue
			}
			run := Running{Senders: Senders(spec)}
			for k, op := range spec.Opcodes {
				if o := j.ops[k]; o != nil && o.ended != "" {
					continue
				}
				run.Flow = planner.Transfer{From: op.From, To: op.To, Bytes: MoveBytes(op, instance(op.Instance))}
				if o := j.ops[k]; o != nil {
					run.Rate = float64(o.rate)
				}
				break
			}
			out = append(out, run)
		}
	}
	return out
}

// applyProgress keeps the rate an executor measured for an opcode of a
// known request's job (a migration's progress is the migrations' fold's).
func (s *State) applyProgress(p events.Progress) {
	r, ok := s.requests[p.Request]
	if !ok || p.BytesPerSecond <= 0 {
		return
	}
	if j, ok := r.jobs[p.Job]; ok {
		j.op(p.Index).rate = p.BytesPerSecond
	}
}
