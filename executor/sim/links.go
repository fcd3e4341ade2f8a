package sim

import (
	"sync"

	"github.com/drovehq/drove/planner"
)

// Links is the network the simulated nodes share: each node's link
// bandwidth each way, and the transfers under way. A move's rate is its
// share of both its sending and its receiving link among the transfers
// running at once (planner.ShareLinks, the one model of it, which the
// planner's estimates use too), recomputed at every step, so a move slows
// when another starts on one of its links and speeds up when it ends. One
// Links is shared by every node's Driver (Config.Links); without it each
// move runs alone at Config.Bandwidth.
type Links struct {
	of planner.Links

	mu    sync.Mutex
	next  int
	flows map[int]planner.Transfer
}

// NewLinks is a network whose nodes have the links of.
func NewLinks(of planner.Links) *Links {
	return &Links{of: of, flows: map[int]planner.Transfer{}}
}

// open registers a transfer from one node to another; close removes it.
func (l *Links) open(from, to string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	l.flows[l.next] = planner.Transfer{From: from, To: to, Bytes: 1}
	return l.next
}

func (l *Links) close(id int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.flows, id)
}

// rate is the bytes per second transfer id gets now.
func (l *Links) rate(id int) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids := make([]int, 0, len(l.flows))
	flows := make([]planner.Transfer, 0, len(l.flows))
	for k, f := range l.flows {
		ids = append(ids, k)
		flows = append(flows, f)
	}
	for k, r := range planner.ShareLinks(flows, l.of) {
		if ids[k] == id {
			return max(int64(r), 1)
		}
	}
	return 1
}
