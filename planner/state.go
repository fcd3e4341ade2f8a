package planner

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// state is the planner's working copy of a cluster: node books, instance
// placements and per-group score sums, changed as moves are committed.
type state struct {
	c          *Cluster
	opts       Options
	nodes      []nodeState
	insts      []instState
	groups     []groupStats
	groupNodes [][]int32 // node indices of each group, in snapshot order
	instIdx    map[string]int32
	nodeIdx    map[string]int32
	contribs   []contrib // each node's current share of its group's score sums
	prefixes   []string  // exclusion tag prefixes
	// extra are instances the request creates (allocations, and the
	// copies the capacity check recreates); their indices follow the
	// snapshot's.
	extra []Instance
	// capacity caches each group's N+1 verdict for allocations
	// (capacity.go); "" means redundant.
	capacity map[int32]string
	// shared marks the nodes whose maps a clone still shares with the
	// state it was cloned from (nil: every node owns its maps).
	shared []bool
	// scratch states do not record instance moves (scratchClone).
	scratch bool
	// buf is what the searches reuse: one search of a state runs at a
	// time (a clone has its own).
	buf *searchBufs
	// inverses are each node's, for the bounds of nodebound.go.
	inverses []inverses
	// exhaustiveGroups searches every target group of a change-group,
	// without the bounds of groupbound.go (tests compare the two).
	exhaustiveGroups bool

	// Location and migration tags (location.go).
	locActive, migActive bool
	mig, rmig            [][]string      // per node: migration tags it has, and accepts
	lx                   map[lxKey]int32 // (location, exclusion tag) pair counts
	lxSpread             float64         // the pairs' component over the whole cluster
}

// searchBufs are buffers a search fills and the next reuses (search.go,
// nodebound.go).
type searchBufs struct {
	scored, best, rest        []scored
	pri, sec, sub             []int32
	lb                        []float64
	seeds                     []int
	seeded                    []bool
	top                       []ranked
	priTerms, secTerms, terms []nodeTerms
}

// spec returns the description of instance i, from the snapshot or the
// request.
func (s *state) spec(i int32) *Instance {
	if int(i) < len(s.c.Instances) {
		return &s.c.Instances[i]
	}
	return &s.extra[int(i)-len(s.c.Instances)]
}

// newInstState builds the books' view of an instance, placed nowhere.
func (s *state) newInstState(in *Instance, idx int32) instState {
	st := instState{
		idx:        idx,
		mem:        in.Memory,
		dsk:        in.DiskSpace,
		vcpus:      in.VCPUs,
		spindleUse: in.SpindleUse,
		spindles:   totalSpindles(in.Disks),
		usesMem:    in.State == Up,
		online:     in.State != Offline,
		usesSecMem: in.State != Offline,
		localDisk:  in.Storage.UsesLocalDisk(),
		kind:       in.Storage,
		mirror:     in.Storage.Mirroring(),
		pri:        NoNode,
		sec:        NoNode,
		dsrd:       desiredLocations(s.c.Tags, in.Tags),
	}
	for _, t := range in.Tags {
		for _, p := range s.prefixes {
			if strings.HasPrefix(t, p) {
				st.exclTags = append(st.exclTags, t)
				break
			}
		}
	}
	return st
}

// addInstance registers an instance the request creates and returns its
// books, placed nowhere.
func (s *state) addInstance(in Instance) *instState {
	idx := int32(len(s.insts))
	s.extra = append(s.extra, in)
	s.insts = append(s.insts, s.newInstState(&s.extra[len(s.extra)-1], idx))
	return &s.insts[idx]
}

// clone returns a copy whose books can be changed without touching s: the
// capacity check simulates emptying nodes on it, once per node, so the
// nodes' peer and tag maps are shared and copied only when the clone first
// writes them (own). s must not change while the clone is in use.
func (s *state) clone() *state {
	t := s.scratchClone()
	t.scratch = false
	t.insts = slices.Clone(s.insts)
	return t
}

// scratchClone is a clone for one simulation pass that reads each
// instance's record before it moves it and never again: its commits do not
// record where instances went, so the records are shared with s, not
// copied (a cluster has ten times more instances than nodes).
func (s *state) scratchClone() *state {
	t := *s
	t.scratch = true
	t.insts = slices.Clip(s.insts) // an append must not write s's records
	t.nodes = slices.Clone(s.nodes)
	t.shared = make([]bool, len(s.nodes))
	for i := range t.shared {
		t.shared[i] = true
	}
	t.groups = slices.Clone(s.groups)
	t.contribs = slices.Clone(s.contribs)
	t.extra = slices.Clip(s.extra)
	t.capacity = nil
	t.buf = &searchBufs{}
	t.lx = maps.Clone(s.lx)
	return &t
}

// instance returns the index of the named instance, or -1.
func (s *state) instance(name string) int32 {
	if i, ok := s.instIdx[name]; ok {
		return i
	}
	return -1
}

// node returns the index of the named node, or -1.
func (s *state) node(name string) int32 {
	if i, ok := s.nodeIdx[name]; ok {
		return i
	}
	return -1
}

// newState checks the snapshot and builds the books the way Ganeti's
// loader does: nodes start from what they report, instances are placed on
// them, then memory reservations for failover peers are derived.
func newState(c *Cluster, o Options) (*state, error) {
	s := &state{c: c, opts: o, buf: &searchBufs{}}
	if err := s.check(); err != nil {
		return nil, err
	}
	s.nodes = make([]nodeState, len(c.Nodes))
	s.nodeIdx = make(map[string]int32, len(c.Nodes))
	s.instIdx = make(map[string]int32, len(c.Instances))
	for i := range c.Nodes {
		s.nodeIdx[c.Nodes[i].Name] = int32(i)
	}
	for i := range c.Instances {
		s.instIdx[c.Instances[i].Name] = int32(i)
	}
	s.groupNodes = make([][]int32, len(c.Groups))
	for i := range c.Nodes {
		n := &c.Nodes[i]
		s.nodes[i] = loadNode(c, i)
		s.groupNodes[n.Group] = append(s.groupNodes[n.Group], int32(i))
	}
	s.loadTags()
	s.prefixes = c.exclusionPrefixes()
	s.insts = make([]instState, len(c.Instances))
	for i := range c.Instances {
		in := &c.Instances[i]
		st := s.newInstState(in, int32(i))
		st.pri = int32(in.Primary)
		if st.mirror == MirroredInternally {
			st.sec = int32(in.Secondary)
		}
		st.locScore = s.pairScore(st.pri, st.sec)
		s.insts[i] = st
		s.placeLoaded(&st)
	}
	for i := range s.nodes {
		n := &s.nodes[i]
		n.rMem = n.maxPeer()
		recorded := int64(n.tMem) - n.nMem - n.iMem
		reported := c.Nodes[i].FreeMemory
		if n.tMem == 0 {
			reported = 0
		}
		n.xMem = recorded - reported
		// Ganeti 3.0 (the hail Debian ships) starts a node's N+1 flag from
		// the free memory the node reported; moves then update it from the
		// books.
		n.failN1 = reported < n.rMem
	}
	s.groups = make([]groupStats, len(c.Groups))
	s.lx = map[lxKey]int32{}
	for i := range s.insts {
		s.locExclAdd(&s.nodes[s.insts[i].pri], &s.insts[i], 1)
	}
	s.contribs = make([]contrib, len(s.nodes))
	s.inverses = make([]inverses, len(s.nodes))
	for i := range s.nodes {
		s.inverses[i] = inverseOf(&s.nodes[i])
		s.contribs[i] = contribOf(&s.nodes[i])
		s.groups[s.nodes[i].group].addContrib(&s.contribs[i], 1)
	}
	return s, nil
}

// loadNode is node i's book as it reports itself; a node offline or not VM
// capable has an empty one.
func loadNode(c *Cluster, i int) nodeState {
	n := &c.Nodes[i]
	pol := c.Groups[n.Group].Policy
	live := !n.Offline && n.VMCapable
	ns := nodeState{
		idx:       int32(i),
		group:     int32(n.Group),
		offline:   !live || n.Drained,
		vcpuRatio: pol.VCPURatio,
		excl:      n.ExclusiveStorage,
		peers:     map[int32]int64{},
		tags:      map[string]int32{},
	}
	if live {
		ns.tMem = float64(n.TotalMemory)
		ns.nMem = n.ReservedMemory
		if c.StaticNodeMemory > 0 {
			ns.nMem = c.StaticNodeMemory
		}
		ns.fMemForth = n.FreeMemory
		ns.tDsk = float64(n.TotalDisk)
		ns.fDsk = n.FreeDisk
		ns.tCpu = float64(n.TotalCPUs)
		ns.uCpu = n.ReservedCPUs
		ns.tSp = n.TotalSpindles
		ns.fSp = n.FreeSpindles
		ns.hiSp = pol.SpindleRatio * float64(n.TotalSpindles)
	}
	return ns
}

// placeLoaded records an instance found on its nodes. Unlike a move, it
// takes no memory or disk: the nodes' reported free space already counts
// it (Ganeti's setPri and setSec).
func (s *state) placeLoaded(in *instState) {
	p := &s.nodes[in.pri]
	if in.online {
		p.uCpu += in.vcpus
	}
	if in.usesMem {
		p.iMem += in.mem
	} else {
		p.fMemForth -= in.mem
	}
	_, p.instSp = p.spindleDelta(in, true)
	p.nPri++
	p.conflicts += p.tagDelta(in, true)
	p.locScore += in.locScore + dsrdScore(p, in)
	commitPriTags(p, in, true)
	if in.sec == NoNode {
		return
	}
	sn := &s.nodes[in.sec]
	_, sn.instSp = sn.spindleDelta(in, true)
	sn.nSec++
	if in.usesSecMem {
		sn.setPeer(in.pri, sn.peers[in.pri]+in.mem)
	}
}

func totalSpindles(ds []Disk) int64 {
	var t int64
	for _, d := range ds {
		if d.Spindles <= 0 {
			return -1
		}
		t += d.Spindles
	}
	return t
}

// check rejects snapshots the planner cannot reason about.
func (s *state) check() error {
	c := s.c
	var probs []string
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if n.Group < 0 || n.Group >= len(c.Groups) {
			probs = append(probs, fmt.Sprintf("node %q is in no known group", n.Name))
		}
		if !n.Offline && n.VMCapable && (n.TotalMemory <= 0 || n.TotalCPUs <= 0) {
			probs = append(probs, fmt.Sprintf("node %q: total_memory and total_cpus must be positive", n.Name))
		}
	}
	for i := range c.Instances {
		in := &c.Instances[i]
		if in.Primary < 0 || in.Primary >= len(c.Nodes) {
			probs = append(probs, fmt.Sprintf("instance %q has no known primary node", in.Name))
			continue
		}
		if in.Storage.Mirroring() == MirroredInternally {
			switch {
			case in.Secondary < 0 || in.Secondary >= len(c.Nodes):
				probs = append(probs, fmt.Sprintf("instance %q (%s) has no known secondary node", in.Name, in.Storage))
			case in.Secondary == in.Primary:
				probs = append(probs, fmt.Sprintf("instance %q has the same primary and secondary node %q", in.Name, c.Nodes[in.Primary].Name))
			}
		}
		if in.Memory < 0 || in.DiskSpace < 0 || in.VCPUs < 0 {
			probs = append(probs, fmt.Sprintf("instance %q has a negative size", in.Name))
		}
	}
	if len(probs) > 8 {
		probs = append(probs[:8], fmt.Sprintf("and %d more", len(probs)-8))
	}
	if len(probs) > 0 {
		return fmt.Errorf("%w: %s", ErrInconsistent, joinProblems(probs))
	}
	return nil
}

// usable reports whether node i may receive instances.
func (s *state) usable(i int32) bool { return !s.nodes[i].offline }

func (s *state) nodeName(i int32) string { return s.c.Nodes[i].Name }

// own gives node i maps of its own before they are written, if it still
// shares them with the state it was cloned from.
func (s *state) own(i int32) {
	if s.shared == nil || !s.shared[i] {
		return
	}
	n := &s.nodes[i]
	n.peers = maps.Clone(n.peers)
	n.tags = maps.Clone(n.tags)
	s.shared[i] = false
}
