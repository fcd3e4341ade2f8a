package planner

import "fmt"

// outcome collects a plan as instances are decided.
type outcome struct {
	plan     Plan
	profiles []jobProfile
}

func (o *outcome) fail(name, reason string) { o.failHail(name, reason, reason) }

// failHail records a failure with hail's words for it besides Drove's.
func (o *outcome) failHail(name, reason, hail string) {
	o.plan.Failed = append(o.plan.Failed, Failed{Instance: name, Reason: reason, Hail: hail})
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
	name := s.spec(in.idx).Name
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
	return compute(c, r, o, nil)
}

// compute is Compute with the state tweaked first (tests).
func compute(c *Cluster, r Request, o Options, tweak func(*state)) (*Plan, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	s, err := newState(c, o)
	if err != nil {
		return nil, err
	}
	if tweak != nil {
		tweak(s)
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
	case Allocate, MultiAllocate:
		s.allocate(&r, &out)
	case Relocate:
		s.relocate(&r, &out)
	case AllocateSecondary:
		s.allocateSecondary(&r, &out)
	}

	lanes := o.MaxMovesPerNode
	if o.LimitAtRelease {
		lanes = 0
	}
	deps := schedule(initial, out.profiles, lanes)
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
	for _, a := range p.Allocated {
		touched[int32(c.GroupIndex(a.Group))] = true
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
	case Allocate, MultiAllocate:
		return s.checkAllocation(r)
	case AllocateSecondary:
		if len(r.Instances) != 1 {
			return fmt.Errorf("%w: an allocate-secondary request names exactly one instance, got %d", ErrBadRequest, len(r.Instances))
		}
	case Relocate:
		if len(r.Instances) != 1 {
			return fmt.Errorf("%w: a relocate request names exactly one instance, got %d", ErrBadRequest, len(r.Instances))
		}
		for _, n := range r.RelocateFrom {
			if s.node(n) < 0 {
				return fmt.Errorf("%w: relocate_from: %q", ErrUnknownNode, n)
			}
		}
	default:
		return fmt.Errorf("%w: request type %q is not one of node-evacuate, change-group, allocate, multi-allocate, relocate, allocate-secondary", ErrBadRequest, r.Kind)
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

// checkAllocation rejects allocation requests that cannot be planned.
// Nodes named in RestrictToNodes that the snapshot lacks are not an error:
// as in hail, they simply match nothing.
func (s *state) checkAllocation(r *Request) error {
	if r.Kind == Allocate && len(r.New) != 1 {
		return fmt.Errorf("%w: an allocate request places exactly one instance, got %d", ErrBadRequest, len(r.New))
	}
	if len(r.New) == 0 {
		return fmt.Errorf("%w: no instances to allocate", ErrBadRequest)
	}
	seen := map[string]bool{}
	for i := range r.New {
		ni := &r.New[i]
		name := ni.Instance.Name
		switch {
		case name == "":
			return fmt.Errorf("%w: new instance %d has no name", ErrBadRequest, i)
		case seen[name]:
			return fmt.Errorf("%w: new instance %q is listed twice", ErrBadRequest, name)
		case ni.RequiredNodes != NodesFor(ni.Instance.Storage):
			return fmt.Errorf("%w: %q: storage kind %q needs %d node(s), got %d", ErrBadRequest, name,
				ni.Instance.Storage, NodesFor(ni.Instance.Storage), ni.RequiredNodes)
		case ni.Group != "" && s.c.GroupIndex(ni.Group) < 0:
			return fmt.Errorf("%w: %q: group %q", ErrUnknownGroup, name, ni.Group)
		case !ni.Instance.Storage.Known():
			return fmt.Errorf("%w: %q: unknown storage kind %q", ErrBadRequest, name, ni.Instance.Storage)
		case ni.Instance.Memory < 0 || ni.Instance.DiskSpace < 0 || ni.Instance.VCPUs < 0:
			return fmt.Errorf("%w: %q has a negative size", ErrBadRequest, name)
		}
		seen[name] = true
	}
	return nil
}

// NodesFor is how many nodes a new instance of kind k needs: a primary and
// a secondary for internally mirrored storage, a primary otherwise. Ganeti
// always asks for that many; a request that asks otherwise is refused.
func NodesFor(k StorageKind) int {
	if k.Mirroring() == MirroredInternally {
		return 2
	}
	return 1
}
