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
// operator's caps, the queue picks which ready jobs run first, aiming at
// the terms of the lower bound (planner.LowerBound):
//
//   - the most urgent job first: the one on the busiest link — the node
//     with the most sending or receiving left at its own bandwidth (its
//     Backlog, counting the later opcodes of running jobs too) — or with
//     the longest chain of opcodes itself, whichever is more; so that the
//     busiest links start at once and stay busy, and a long chain starts
//     early (longest-processing-time first, LPT);
//   - then the longest job, then plan order;
//   - a move only where its links have room: released next to the moves
//     already running (those with a measured rate holding it, the others
//     sharing the rest as planner.ShareLinks shares links), it must get
//     more than half the rate it would get alone, or add a quarter of it
//     to what the links carry. A move that would only split a busy link
//     waits, and its slot goes to one whose links are idle; one that
//     needs little of a busy link (a slow receiver), or uses what a move
//     slowed elsewhere leaves of it, goes.
//     This is also how `auto` chooses a node's concurrency: as many moves
//     as its link has room for.
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
	// Transfers are its opcodes' transfers, in order; Flow the longest,
	// where the job spends most of its time.
	Transfers []planner.Transfer
	Flow      planner.Transfer
	// Seconds is the job's estimated duration alone on its links.
	Seconds float64
}

// Backlog is the link time left at each node: the seconds of sending and
// of receiving its transfers still ahead take at the node's own
// bandwidth.
type Backlog struct {
	Send, Recv map[string]float64
}

// NewBacklog is an empty backlog.
func NewBacklog() Backlog {
	return Backlog{Send: map[string]float64{}, Recv: map[string]float64{}}
}

// Add counts transfers (times sign: -1 takes them off).
func (b Backlog) Add(ts []planner.Transfer, links planner.Links, sign float64) {
	for _, t := range ts {
		if t.Bytes <= 0 {
			continue
		}
		b.Send[t.From] += sign * float64(t.Bytes) / float64(links(t.From).Send)
		b.Recv[t.To] += sign * float64(t.Bytes) / float64(links(t.To).Receive)
	}
}

// pressure is the backlog of every link a candidate uses, summed: of two
// jobs on the busiest node, the one whose other end is busier goes first.
func (b Backlog) pressure(c *Candidate) float64 {
	var p float64
	for _, t := range c.Transfers {
		if t.Bytes > 0 {
			p += b.Send[t.From] + b.Recv[t.To]
		}
	}
	return p
}

func (b Backlog) clone() Backlog {
	return Backlog{Send: maps.Clone(b.Send), Recv: maps.Clone(b.Recv)}
}

// urgency is the largest bound term a candidate is part of: the backlog
// of the busiest link it uses, or its own chain.
func (b Backlog) urgency(c *Candidate) float64 {
	u := c.Seconds
	for _, t := range c.Transfers {
		if t.Bytes > 0 {
			u = max(u, b.Send[t.From], b.Recv[t.To])
		}
	}
	return u
}

// Running is a job running now, in any request.
type Running struct {
	Senders []string
	Flow    planner.Transfer
	// Rate is what its executor last measured, bytes per second; 0 until
	// it reports one (the model's share of its links stands in).
	Rate float64
}

// minShare is the part of a move's own rate it must get, more than, to
// be released next to the moves running; minGain the part of it the
// links must carry more, else.
const (
	minShare = 0.5
	minGain  = 0.25
)

// Choose returns the candidates to release now, in release order (as
// indices into cands). backlog is the link time still ahead at each node
// (the candidates' transfers included).
func Choose(cands []Candidate, running []Running, backlog Backlog, lim Limits, links planner.Links) []int {
	perNode := map[string]int{}
	for _, r := range running {
		for _, n := range r.Senders {
			perNode[n]++
		}
	}
	net := newNetwork(running, links)
	left := backlog.clone() // less what this pass releases
	total := len(running)
	taken := make([]bool, len(cands))
	var out []int
	fits := func(c *Candidate) bool {
		return lim.PerNode <= 0 || !slices.ContainsFunc(c.Senders, func(n string) bool { return perNode[n] >= lim.PerNode })
	}
	for lim.Cluster <= 0 || total < lim.Cluster {
		best := pick(cands, taken, fits, net, left, lim.IndexOrder)
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
		if c.Flow.Bytes > 0 {
			net.flows = append(net.flows, c.Flow)
		}
		left.Add(c.Transfers, links, -1)
	}
	return out
}

// pick returns the candidate to release next (-1 if none): in plan order
// the first within the limits, else the first by before among those
// within the limits whose flow is worth running now. Whether a flow is
// worth it depends on its two ends only, not its bytes, so the best of
// each pair of ends is found first and only those are asked, best first:
// a pass over thousands of ready jobs costs a few link shares, not one
// per job.
func pick(cands []Candidate, taken []bool, fits func(*Candidate) bool, net *network, left Backlog, indexOrder bool) int {
	bestOf := map[[2]string]int{}
	for i := range cands {
		c := &cands[i]
		if taken[i] || !fits(c) {
			continue
		}
		if indexOrder {
			return i
		}
		var ends [2]string // a move that sends nothing is always worth it
		if c.Flow.Bytes > 0 {
			ends = [2]string{c.Flow.From, c.Flow.To}
		}
		if b, ok := bestOf[ends]; !ok || before(c, &cands[b], left) {
			bestOf[ends] = i
		}
	}
	order := slices.Collect(maps.Values(bestOf))
	slices.SortFunc(order, func(a, b int) int {
		if before(&cands[a], &cands[b], left) {
			return -1
		}
		return 1 // before is a total order (plan order breaks ties)
	})
	for k, i := range order {
		if k == maxAsked {
			break // the most urgent links are busy: wait for one to free
		}
		if f := cands[i].Flow; f.Bytes <= 0 || net.worth(f) {
			return i
		}
	}
	return -1
}

// maxAsked bounds the pairs of ends pick asks about in one pick: a group
// change between two large groups has a pair for every source and target,
// and a pass that asked each about every link share would cost their
// product each time a move ends.
const maxAsked = 16

// network is the links as a release sees them: the running moves whose
// executors measured a rate hold it (a link slower than announced shows
// there), and the other moves share what is left as planner.ShareLinks
// shares it.
type network struct {
	links      planner.Links
	sent, recv map[string]float64 // held by measured moves
	flows      []planner.Transfer // the moves that share the rest
}

func newNetwork(running []Running, links planner.Links) *network {
	n := &network{links: links, sent: map[string]float64{}, recv: map[string]float64{}}
	for _, r := range running {
		switch {
		case r.Flow.Bytes <= 0:
		case r.Rate > 0:
			n.sent[r.Flow.From] += r.Rate
			n.recv[r.Flow.To] += r.Rate
		default:
			n.flows = append(n.flows, r.Flow)
		}
	}
	return n
}

// worth reports whether f is worth running now: it would get more than
// minShare of its own rate, or the links would carry at least minGain of
// its rate more than without it (a busy link with room left: a move
// beside it slowed by its other end).
func (n *network) worth(f planner.Transfer) bool {
	rest := func(node string) planner.Link {
		l := n.links(node)
		return planner.Link{Send: max(l.Send-int64(n.sent[node]), 0), Receive: max(l.Receive-int64(n.recv[node]), 0)}
	}
	var before float64
	for _, r := range planner.ShareLinks(n.flows, rest) {
		before += r
	}
	rates := planner.ShareLinks(append(slices.Clip(n.flows), f), rest)
	var after float64
	for _, r := range rates {
		after += r
	}
	capRate := f.Cap(n.links)
	return rates[len(rates)-1] > minShare*capRate || after-before >= minGain*capRate
}

// before orders candidates: the most urgent first, then the one whose
// links are the busiest in all, then the longest, then plan order.
func before(a, b *Candidate, left Backlog) bool {
	if c := cmp.Compare(left.urgency(a), left.urgency(b)); c != 0 {
		return c > 0
	}
	if c := cmp.Compare(left.pressure(a), left.pressure(b)); c != 0 {
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
	c := Candidate{Job: job, Senders: Senders(j), Transfers: ts}
	longest := -1.0
	for _, t := range ts {
		d := t.Seconds(links)
		c.Seconds += d
		if d > longest {
			c.Flow, longest = t, d
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
