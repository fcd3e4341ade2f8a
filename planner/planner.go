package planner

import "fmt"

// outcome collects a plan as instances are decided.
type outcome struct {
	plan     Plan
	profiles []jobProfile
}

func (o *outcome) fail(name, reason string) {
	o.plan.Failed = append(o.plan.Failed, Failed{Instance: name, Reason: reason})
}

// move commits the chosen candidate and records its job.
func (o *outcome) move(s *state, in *instState, c candidate) {
	before := *in
	ops := s.opcodes(before, c.list())
	prof := s.commit(in, c)
	nodes := []string{s.nodeName(in.pri)}
	if in.sec != NoNode {
		nodes = append(nodes, s.nodeName(in.sec))
	}
	name := s.c.Instances[in.idx].Name
	o.plan.Moved = append(o.plan.Moved, Moved{
		Instance: name,
		Group:    s.c.Groups[s.nodes[in.pri].group].Name,
		Nodes:    nodes,
	})
	o.plan.Jobs = append(o.plan.Jobs, Job{Instance: name, Opcodes: ops})
	o.profiles = append(o.profiles, prof)
}

// Compute answers a request on a snapshot. It returns an error only when the
// request or the snapshot is unusable; instances that cannot move are
// listed in the plan's Failed with a reason.
func Compute(c *Cluster, r Request, o Options) (*Plan, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s, err := newState(c, o)
	if err != nil {
		return nil, err
	}
	if err := s.checkRequest(&r); err != nil {
		return nil, err
	}
	initial := make([]nodeState, len(s.nodes))
	copy(initial, s.nodes)
	before := make([]float64, len(c.Groups))
	for g := range c.Groups {
		before[g] = s.exactGroupScore(g)
	}

	var out outcome
	var evac map[int32]bool
	switch r.Kind {
	case NodeEvacuate:
		evac, err = s.evacuatedNodes(&r)
		if err != nil {
			return nil, err
		}
		s.evacuate(&r, evac, &out)
	case ChangeGroup:
		if err := s.changeGroup(&r, &out); err != nil {
			return nil, err
		}
	}

	deps := schedule(initial, out.profiles, o.MaxMovesPerNode)
	for j := range out.plan.Jobs {
		out.plan.Jobs[j].Depends = deps[j]
	}
	p := &out.plan
	touched := map[int32]bool{}
	for _, prof := range out.profiles {
		for _, n := range prof.nodes {
			touched[s.nodes[n].group] = true
		}
	}
	for g := range c.Groups {
		after := s.exactGroupScore(g)
		p.ScoreBefore += before[g]
		p.ScoreAfter += after
		if touched[int32(g)] {
			p.Groups = append(p.Groups, GroupScore{Group: c.Groups[g].Name, Before: before[g], After: after})
		}
	}
	for i := range c.Nodes {
		if evac[int32(i)] {
			p.EvacuatedNodes = append(p.EvacuatedNodes, c.Nodes[i].Name)
		}
	}
	return p, nil
}

// checkRequest rejects requests that cannot be planned, naming the field.
func (s *state) checkRequest(r *Request) error {
	switch r.Kind {
	case NodeEvacuate:
		if !r.Mode.Valid() {
			return fmt.Errorf("%w: evac_mode %q is not one of primary-only, secondary-only, all", ErrBadRequest, r.Mode)
		}
	case ChangeGroup:
	default:
		return fmt.Errorf("%w: request type %q is not one of node-evacuate, change-group", ErrBadRequest, r.Kind)
	}
	seen := map[string]bool{}
	for _, name := range r.Instances {
		if s.instance(name) < 0 {
			return fmt.Errorf("%w: instances: %q", ErrUnknownInstance, name)
		}
		if seen[name] {
			return fmt.Errorf("%w: instances: %q is listed twice", ErrBadRequest, name)
		}
		seen[name] = true
	}
	for _, n := range r.EvacuatedNodes {
		if s.node(n) < 0 {
			return fmt.Errorf("%w: evacuated nodes: %q", ErrUnknownNode, n)
		}
	}
	return nil
}

// evacuatedNodes returns the nodes being emptied, as given or inferred.
func (s *state) evacuatedNodes(r *Request) (map[int32]bool, error) {
	if len(r.EvacuatedNodes) == 0 {
		return s.inferEvacuated(r), nil
	}
	evac := map[int32]bool{}
	for _, n := range r.EvacuatedNodes {
		evac[s.node(n)] = true
	}
	return evac, nil
}
