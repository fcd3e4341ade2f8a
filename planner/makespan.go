package planner

import (
	"math"
	"sort"
)

// How long moves take. A move sends its bytes from one node's link to
// another's: it is limited by both, and moves that share a link share its
// bandwidth. This file holds the one model of that (ShareLinks, used by
// the simulated driver and by every estimate) and the lower bound of an
// evacuation's makespan that schedules are measured against.

// DefaultLinkBytesPerSecond is a node's link bandwidth, each way, when the
// inventory does not say: about 1 Gbit/s less overhead.
const DefaultLinkBytesPerSecond = 100 << 20

// Link is a node's network bandwidth in bytes per second, each way.
type Link struct {
	Send, Receive int64
}

// LinkOf returns the node's link, with the default for what it does not
// announce.
func (n *Node) LinkOf() Link {
	return Link{Send: orDefault(n.SendBytesPerSecond), Receive: orDefault(n.ReceiveBytesPerSecond)}
}

func orDefault(v int64) int64 {
	if v <= 0 {
		return DefaultLinkBytesPerSecond
	}
	return v
}

// Links gives a node's link by name; unknown nodes get the default.
type Links func(node string) Link

// DefaultLinks is every node at the default bandwidth.
func DefaultLinks(string) Link {
	return Link{Send: DefaultLinkBytesPerSecond, Receive: DefaultLinkBytesPerSecond}
}

// Links returns the links of the cluster's nodes, by name.
func (c *Cluster) Links() Links {
	byName := make(map[string]Link, len(c.Nodes))
	for i := range c.Nodes {
		byName[c.Nodes[i].Name] = c.Nodes[i].LinkOf()
	}
	return func(n string) Link {
		if l, ok := byName[n]; ok {
			return l
		}
		return DefaultLinks(n)
	}
}

// Transfer is the data of one move: Bytes from one node to another.
type Transfer struct {
	From, To string
	Bytes    int64
}

// Cap is the fastest the transfer can go alone: the slower of the
// sender's send and the receiver's receive bandwidth.
func (t Transfer) Cap(links Links) float64 {
	return float64(min(links(t.From).Send, links(t.To).Receive))
}

// Seconds is how long the transfer takes alone on its links.
func (t Transfer) Seconds(links Links) float64 {
	if t.Bytes <= 0 {
		return 0
	}
	return float64(t.Bytes) / t.Cap(links)
}

// ShareLinks returns the rate, bytes per second, of each of the flows
// running at once: max-min fair, as TCP streams share links. Every
// sending and receiving link is filled in turn from its most constrained
// flows: the link whose equal share is smallest fixes its flows at that
// share, and the rest of each link is split among the flows left.
func ShareLinks(flows []Transfer, links Links) []float64 {
	type port struct {
		node string
		recv bool
	}
	left := map[port]float64{}
	users := map[port][]int{}
	for i, f := range flows {
		for _, p := range []port{{f.From, false}, {f.To, true}} {
			if _, ok := left[p]; !ok {
				l := links(p.node)
				left[p] = float64(l.Send)
				if p.recv {
					left[p] = float64(l.Receive)
				}
			}
			users[p] = append(users[p], i)
		}
	}
	ports := make([]port, 0, len(left))
	for p := range left {
		ports = append(ports, p)
	}
	sort.Slice(ports, func(a, b int) bool { // deterministic ties
		if ports[a].node != ports[b].node {
			return ports[a].node < ports[b].node
		}
		return !ports[a].recv && ports[b].recv
	})
	rates := make([]float64, len(flows))
	fixed := make([]bool, len(flows))
	for todo := len(flows); todo > 0; {
		best, share := port{}, math.Inf(1)
		for _, p := range ports {
			n := 0
			for _, i := range users[p] {
				if !fixed[i] {
					n++
				}
			}
			if n > 0 && left[p]/float64(n) < share {
				best, share = p, left[p]/float64(n)
			}
		}
		for _, i := range users[best] {
			if fixed[i] {
				continue
			}
			fixed[i], rates[i] = true, max(share, 0)
			todo--
			f := flows[i]
			left[port{f.From, false}] -= rates[i]
			left[port{f.To, true}] -= rates[i]
		}
	}
	return rates
}

// Bound is the lower bound of an evacuation's makespan, each term apart.
// No schedule finishes before the busiest node has sent (or received)
// all its bytes at its link's bandwidth, nor before its largest move is
// done alone on its links, nor before the cluster limit's slots have
// carried every move: at most ClusterLimit moves run at once, and each
// holds a slot at least as long as it takes alone, so the moves' summed
// durations over the limit. With one bandwidth everywhere that last term
// is the total bytes over (the limit × the bandwidth).
//
// A move here is one instance's move, the job that carries it out: a
// job's opcodes run one after another (a DRBD instance may need a new
// secondary, a migration and another new secondary), so the largest move
// is the longest job, its transfers' durations summed; for a job of one
// opcode it is that opcode alone.
type Bound struct {
	Seconds float64 `json:"seconds"` // the largest term: the bound
	// Node is the busiest node, and NodeSeconds its send or receive time.
	Node        string  `json:"node"`
	NodeSeconds float64 `json:"node_seconds"`
	// LargestMoveSeconds is the longest move (job) alone on its links.
	LargestMoveSeconds float64 `json:"largest_move_seconds"`
	// ClusterSeconds is the moves' summed durations over the cluster limit.
	ClusterSeconds float64 `json:"cluster_seconds"`
}

// LowerBound is the lower bound of running every move, each the
// transfers of one job in order, with at most clusterLimit moves at once
// (no limit if it is below 1).
func LowerBound(moves [][]Transfer, links Links, clusterLimit int) Bound {
	sent, recv := map[string]int64{}, map[string]int64{}
	var b Bound
	var sum float64
	var names []string
	seen := map[string]bool{}
	for _, move := range moves {
		var d float64
		for _, t := range move {
			if t.Bytes <= 0 {
				continue
			}
			for _, n := range []string{t.From, t.To} {
				if !seen[n] {
					seen[n] = true
					names = append(names, n)
				}
			}
			sent[t.From] += t.Bytes
			recv[t.To] += t.Bytes
			d += t.Seconds(links)
		}
		sum += d
		b.LargestMoveSeconds = max(b.LargestMoveSeconds, d)
	}
	sort.Strings(names)
	for _, n := range names {
		l := links(n)
		s := max(float64(sent[n])/float64(l.Send), float64(recv[n])/float64(l.Receive))
		if s > b.NodeSeconds {
			b.Node, b.NodeSeconds = n, s
		}
	}
	if clusterLimit > 0 {
		b.ClusterSeconds = sum / float64(clusterLimit)
	}
	b.Seconds = max(b.NodeSeconds, b.LargestMoveSeconds, b.ClusterSeconds)
	return b
}
