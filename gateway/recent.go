package gateway

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/drovehq/drove/gateway/wire"
)

// recentTTL is how long the gateway remembers a request it appended while
// the views do not show it. Past that, the projector is far behind and the
// planner's own re-validation is the only guard against double requests.
const recentTTL = 10 * time.Minute

// recent remembers the requests this gateway appended that the views may
// not show yet, with the instances each holds. Without it, a second call
// for the same nodes a moment after the first would pass every check,
// because the projector has not written the first request yet. It also
// lets GET and watch answer for a request just accepted.
type recent struct {
	mu      sync.Mutex
	ttl     time.Duration
	entries map[string]recentEntry
}

type recentEntry struct {
	kind      string
	instances []string // the instances the request holds
	nodes     []string
	mode      string
	targets   []string
	dryRun    bool
	actor     string
	why       string
	at        time.Time
}

func newRecent(ttl time.Duration) *recent {
	return &recent{ttl: ttl, entries: map[string]recentEntry{}}
}

func (r *recent) add(id string, e recentEntry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries[id] = e
}

func (r *recent) get(id string) (recentEntry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[id]
	if ok && time.Since(e.at) > r.ttl {
		delete(r.entries, id)
		return e, false
	}
	return e, ok
}

// ids lists the live entries, dropping expired ones.
func (r *recent) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for id, e := range r.entries {
		if time.Since(e.at) > r.ttl {
			delete(r.entries, id)
			continue
		}
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// forget drops requests the views now show: from then on the views hold
// their claims.
func (r *recent) forget(ids ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		delete(r.entries, id)
	}
}

// unseen is the requests this gateway appended that the views do not
// show yet, in id order. The ones they now show are forgotten: from then
// on the views hold their claims.
func (g *Gateway) unseen(ctx context.Context) ([]unseenRequest, error) {
	pending := g.recent.ids()
	if len(pending) == 0 {
		return nil, nil
	}
	visible, err := g.db.column(ctx, "requests_visible", pending)
	if err != nil {
		return nil, err
	}
	g.recent.forget(visible...)
	var out []unseenRequest
	for _, id := range pending {
		if e, ok := g.recent.get(id); ok {
			out = append(out, unseenRequest{id, e})
		}
	}
	return out, nil
}

type unseenRequest struct {
	id string
	recentEntry
}

// asRequest is the entry as the API shows a request, status "accepted".
func (e recentEntry) asRequest(id string) wire.Request {
	at := e.at.UTC()
	return wire.Request{
		ID: id, Kind: e.kind, Status: "accepted", Nodes: nonNil(e.nodes), Mode: e.mode,
		Instances: nonNil(e.instancesNamed()), TargetGroups: nonNil(e.targets),
		DryRun: e.dryRun, Actor: e.actor, Why: e.why, RequestedAt: &at,
	}
}

// instancesNamed is what the request itself names: a group change's
// instances; an evacuation names nodes only.
func (e recentEntry) instancesNamed() []string {
	if e.kind == kindGroupChange {
		return e.instances
	}
	return nil
}

func nonNil(xs []string) []string {
	if xs == nil {
		return []string{}
	}
	return xs
}
