package gateway

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/gateway/wire"
)

// A dry run's plan answers with each move's predicted downtime: the
// estimate's own model (estimateFrom), the instance going off the move's
// planned source. What was measured is read once for the whole plan
// (measure: three queries), and the instances in one more, so a plan of
// thousands of moves costs the round trips of one estimate.

// planDowntimes predicts the downtime of every move of plan p, in job
// and opcode order.
func (g *Gateway) planDowntimes(ctx context.Context, p wire.PlanRow) ([]wire.MoveDowntime, error) {
	var jobs []events.Job
	if err := json.Unmarshal(p.Jobs, &jobs); err != nil {
		return nil, fmt.Errorf("gateway: the plan's jobs: %w", err)
	}
	names, sources := movers(jobs)
	if len(names) == 0 {
		return nil, nil
	}
	ins, err := many[wire.Instance](ctx, g.db, "instances_named", names)
	if err != nil {
		return nil, err
	}
	byName := make(map[string]wire.Instance, len(ins))
	for _, in := range ins {
		byName[in.Name] = in
	}
	s, err := g.settings(ctx)
	if err != nil {
		return nil, err
	}
	m, err := g.measure(ctx, names, sources)
	if err != nil {
		return nil, err
	}
	var out []wire.MoveDowntime
	for _, j := range jobs {
		for i, op := range j.Opcodes {
			in, ok := byName[op.Instance]
			out = append(out, moveDowntime(j.Index, i, op, in, ok, s, m))
		}
	}
	return out, nil
}

// movers are the instances the jobs move and the nodes they move off,
// each once, in plan order.
func movers(jobs []events.Job) (names, sources []string) {
	seen := map[string]bool{}
	add := func(list *[]string, v string) {
		if v != "" && !seen[v] {
			seen[v] = true
			*list = append(*list, v)
		}
	}
	for _, j := range jobs {
		for _, op := range j.Opcodes {
			add(&names, op.Instance)
		}
	}
	clear(seen) // an instance and a node may share a name
	for _, j := range jobs {
		for _, op := range j.Opcodes {
			add(&sources, op.From)
		}
	}
	return names, sources
}

// moveDowntime is the prediction of one move: the estimate's, off the
// move's source; none for a replace-disks, which copies the disks to a
// new secondary while the instance runs on at its primary.
func moveDowntime(job, idx int, op events.Opcode, in wire.Instance, known bool, s events.SettingsChanged, m measured) wire.MoveDowntime {
	md := wire.MoveDowntime{Job: job, Index: idx, Instance: op.Instance, OpID: string(op.OpID), From: op.From, To: op.To}
	switch {
	case !known:
		md.How = "not predicted: " + op.Instance + " is not in the views"
		return md
	case op.OpID == events.OpInstanceReplaceDisks:
		md.How = "no downtime: replace-disks copies the disks to a new secondary while the instance runs on at its primary"
		return md
	}
	if op.From != "" {
		in.Primary = op.From // the move's source, as planned
	}
	est := estimateFrom(in, s, m)
	md.PredictedDowntimeMS, md.Downtime = est.down.Total().Milliseconds(), est.Downtime
	md.How = est.How
	return md
}
