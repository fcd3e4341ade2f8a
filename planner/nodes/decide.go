package nodes

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner/inventory"
)

// Env is what Decide reads besides the fold, and where its decisions go.
type Env struct {
	// Inv holds the nodes' states the answers restate.
	Inv *inventory.Inventory
	// Emptying names the active request evacuating a node ("" if none):
	// such a node cannot be undrained (jobs.State.Emptying).
	Emptying func(node string) string
	// Apply folds one decision into the service's whole state at once.
	Apply func(events.Envelope, events.Payload)
	// Lease is how long a node's lease lasts without a heartbeat; zero
	// declares no node lost.
	Lease time.Duration
	// CheckKey is the key of a node's LeaseCheck: one that lands in the
	// node's partition of drove.heartbeats and is not the node's name.
	CheckKey func(node string) string
	// Producer names the service in the events it writes.
	Producer string
}

// Decide answers every command not answered yet, in the order read, and
// checks, then declares lost, every node whose lease expired (lost). The
// events are to be appended in one transaction.
func Decide(env Env, st *State) []events.Envelope {
	var out []events.Envelope
	emit := func(p events.Payload, opts ...events.Option) events.Envelope {
		ev := events.New(p, append(opts, events.WithProducer(env.Producer))...)
		out = append(out, ev)
		env.Apply(ev, p)
		return ev
	}
	for _, id := range st.order {
		c := st.cmds[id]
		if c.answered {
			continue
		}
		u, end := answer(env, st, c.req)
		// The requester's reason trail, with the service's word added.
		r := events.Reason{Actor: "planner", RequestID: id,
			Why: end.Reason + "; requested by " + c.env.Reason.Actor + ": " + c.env.Reason.Why}
		if u != nil {
			emit(*u, events.CausedBy(c.env), events.WithReason(r))
		}
		emit(end, events.CausedBy(c.env), events.WithReason(r))
	}
	if env.Lease > 0 {
		lost(env, st, emit)
	}
	return out
}

// answer decides one command: the node's new state (nil when refused)
// and the command's end.
func answer(env Env, st *State, q events.NodeActionRequested) (*events.NodeUpdated, events.NodeActionEnded) {
	end := events.NodeActionEnded{Request: q.Request, Node: q.Node, Action: q.Action}
	refuse := func(reason string) (*events.NodeUpdated, events.NodeActionEnded) {
		end.Refused, end.Reason = true, fmt.Sprintf("%s of node %s refused: %s", q.Action, q.Node, reason)
		return nil, end
	}
	if _, ok := env.Inv.Nodes[q.Node]; !ok {
		return refuse(fmt.Sprintf("unknown node %q", q.Node))
	}
	n := env.Inv.NodeState(q.Node)
	switch q.Action {
	case events.NodeUndrain:
		if r := env.Emptying(q.Node); r != "" {
			return refuse(fmt.Sprintf("active request %s is emptying %s; cancel it or wait for its end", r, q.Node))
		}
		n.Drained = false
		end.Reason = fmt.Sprintf("node %s undrained: back in service", q.Node)
	case events.NodeOffline:
		n.Offline = true
		end.Reason = fmt.Sprintf("node %s marked offline: nothing is placed on it, and its moves end as a lost node's", q.Node)
	default: // events.NodeOnline; the codec allows no other
		n.Offline = false
		st.renew(q.Node)
		end.Reason = fmt.Sprintf("node %s marked online: back in service", q.Node)
	}
	return &n, end
}

// lost declares offline each online node whose lease expired, in node
// order: it may be down, or cut off from the broker, and either way the
// rest of the system stops waiting for it (DESIGN.md, "Node lifecycle").
// A lapse is first checked (events.LeaseCheck): the node is declared lost
// only once the check, appended after the lapse, is read back with no
// heartbeat read since, so the heartbeats the node appended before it are
// all read. A check not read back within half a lease (its append lost,
// or the read still lagging) is appended again.
func lost(env Env, st *State, emit func(events.Payload, ...events.Option) events.Envelope) {
	now := st.now()
	for _, name := range slices.Sorted(maps.Keys(st.beats)) {
		n, ok := env.Inv.Nodes[name]
		if !ok || n.Offline {
			continue
		}
		since := now.Sub(st.beats[name])
		if since <= env.Lease {
			continue
		}
		c := st.checks[name]
		switch {
		case c != nil && c.read:
			delete(st.checks, name)
			u := env.Inv.NodeState(name)
			u.Offline = true
			emit(u, events.WithReason(events.Reason{Actor: "planner", Why: fmt.Sprintf(
				"node %s lost: no heartbeat for %s (lease %s), none in the log before the planner's check; "+
					"marked offline until an operator brings it online", name, since.Round(time.Millisecond), env.Lease)}))
		case c == nil || now.Sub(c.sent) > env.Lease/2:
			ev := emit(events.LeaseCheck{Node: name, Key: env.CheckKey(name), Sent: now, Read: st.read[name]},
				events.WithReason(events.Reason{Actor: "planner", Why: fmt.Sprintf(
					"the lease of node %s lapsed (no heartbeat for %s, lease %s): checking the log holds none unread before declaring it lost",
					name, since.Round(time.Millisecond), env.Lease)}))
			st.checks[name] = &leaseCheck{id: ev.ID, sent: now}
		}
	}
}
