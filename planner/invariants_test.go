package planner

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// checkPlan verifies what every plan must hold, independently of how the
// planner works: every requested instance is moved or failed exactly once,
// moves respect the request's mode and groups, dependencies point back, and
// running the jobs in parallel as their dependencies allow never takes a
// node over its memory or disk nor past MaxMovesPerNode sends.
func checkPlan(c *Cluster, r Request, o Options, p *Plan) error {
	if err := checkEachRequestedOnce(r, p); err != nil {
		return err
	}
	if len(p.Jobs) != len(p.Moved) {
		return fmt.Errorf("%d jobs for %d moved instances", len(p.Jobs), len(p.Moved))
	}
	evac := map[string]bool{}
	for _, n := range p.EvacuatedNodes {
		evac[n] = true
	}
	for j, m := range p.Moved {
		if err := checkMove(c, r, p, j, m, evac); err != nil {
			return err
		}
	}
	rng := rand.New(rand.NewPCG(1, uint64(len(p.Jobs))))
	for run := 0; run < 20; run++ {
		if err := simulate(c, p, o.MaxMovesPerNode, o.LimitAtRelease, rng, run%4 == 3); err != nil {
			return fmt.Errorf("parallel run %d: %w", run, err)
		}
	}
	return nil
}

// checkEachRequestedOnce checks that every requested instance is moved or
// failed exactly once, that failures give a reason, and that nothing else is.
func checkEachRequestedOnce(r Request, p *Plan) error {
	seen := map[string]int{}
	for _, m := range p.Moved {
		seen[m.Instance]++
	}
	for _, f := range p.Failed {
		seen[f.Instance]++
		if f.Reason == "" {
			return fmt.Errorf("instance %s failed without a reason", f.Instance)
		}
	}
	for _, name := range r.Instances {
		if seen[name] != 1 {
			return fmt.Errorf("instance %s appears %d times in moved+failed", name, seen[name])
		}
		delete(seen, name)
	}
	for name := range seen {
		return fmt.Errorf("instance %s was not requested but appears in the plan", name)
	}
	return nil
}

// checkMove checks the j-th move and its job: the job is for that instance
// and depends only on earlier jobs, the instance could be moved, and it went
// to as many known, usable nodes as its storage needs, where the request
// allows.
func checkMove(c *Cluster, r Request, p *Plan, j int, m Moved, evac map[string]bool) error {
	in := &c.Instances[c.InstanceIndex(m.Instance)]
	if p.Jobs[j].Instance != m.Instance {
		return fmt.Errorf("job %d is for %s, moved[%d] is %s", j, p.Jobs[j].Instance, j, m.Instance)
	}
	for _, op := range p.Jobs[j].Opcodes {
		if op.Instance != m.Instance {
			return fmt.Errorf("job %d has an opcode for %s", j, op.Instance)
		}
	}
	for _, d := range p.Jobs[j].Depends {
		if d.Job < 0 || d.Job >= j {
			return fmt.Errorf("job %d depends on job %d, which is not earlier", j, d.Job)
		}
	}
	if in.Storage.Mirroring() == NotMirrored {
		return fmt.Errorf("%s (%s) was moved", m.Instance, in.Storage)
	}
	wantNodes := 1
	if in.Storage.Mirroring() == MirroredInternally {
		wantNodes = 2
	}
	if len(m.Nodes) != wantNodes || (wantNodes == 2 && m.Nodes[0] == m.Nodes[1]) {
		return fmt.Errorf("%s moved to nodes %v", m.Instance, m.Nodes)
	}
	for _, n := range m.Nodes {
		k := c.NodeIndex(n)
		if k < 0 {
			return fmt.Errorf("%s moved to unknown node %s", m.Instance, n)
		}
		if c.Groups[c.Nodes[k].Group].Name != m.Group {
			return fmt.Errorf("%s: node %s is not in group %s", m.Instance, n, m.Group)
		}
	}
	if err := checkMoveFitsRequest(c, r, in, m, evac); err != nil {
		return err
	}
	for _, n := range m.Nodes {
		node := &c.Nodes[c.NodeIndex(n)]
		if !node.Usable() && n != c.Nodes[in.Primary].Name && (in.Secondary == NoNode || n != c.Nodes[in.Secondary].Name) {
			return fmt.Errorf("%s moved onto unusable node %s", m.Instance, n)
		}
	}
	return nil
}

// checkMoveFitsRequest checks a move against the request's kind: an
// evacuation keeps the group and avoids the evacuated nodes as its mode
// says; a group change leaves for an allocable target group.
func checkMoveFitsRequest(c *Cluster, r Request, in *Instance, m Moved, evac map[string]bool) error {
	origGroup := c.Groups[c.Nodes[in.Primary].Group].Name
	switch r.Kind {
	case NodeEvacuate:
		if m.Group != origGroup {
			return fmt.Errorf("%s left its group %s for %s in an evacuation", m.Instance, origGroup, m.Group)
		}
		switch r.Mode {
		case PrimaryOnly:
			if evac[m.Nodes[0]] {
				return fmt.Errorf("%s: new primary %s is being evacuated", m.Instance, m.Nodes[0])
			}
		case SecondaryOnly:
			if m.Nodes[0] != c.Nodes[in.Primary].Name || evac[m.Nodes[1]] {
				return fmt.Errorf("%s: secondary-only move to %v", m.Instance, m.Nodes)
			}
		case EvacAll:
			for _, n := range m.Nodes {
				if evac[n] {
					return fmt.Errorf("%s: moved onto %s, which is being evacuated", m.Instance, n)
				}
			}
		}
	case ChangeGroup:
		if m.Group == origGroup {
			return fmt.Errorf("%s stayed in group %s", m.Instance, origGroup)
		}
		g := c.GroupIndex(m.Group)
		if c.Groups[g].AllocPolicy == Unallocable {
			return fmt.Errorf("%s moved to unallocable group %s", m.Instance, m.Group)
		}
		if len(r.TargetGroups) > 0 && !slices.ContainsFunc(r.TargetGroups, func(k string) bool { return c.GroupIndex(k) == g }) {
			return fmt.Errorf("%s moved to group %s, not a target", m.Instance, m.Group)
		}
	}
	return nil
}

// simEffect is what a job does to one node's free memory and disk.
type simEffect struct {
	node      int
	mem, disk int64
}

// Where a job stands in a simulation.
const (
	simWaiting = iota
	simRunning
	simDone
)

// simRun is the state of one simulated run of a plan.
type simRun struct {
	c        *Cluster
	p        *Plan
	maxMoves int
	freeMem  []int64
	freeDisk []int64
	// effects of each job, from the opcodes and the instance's placement.
	incs, decs [][]simEffect
	senders    [][]int
	status     []int
	ended      []JobStatus
	sending    []int
}

// simulate runs the jobs in a random order their dependencies allow, with
// random overlap and, if failures is set, random job failures. A job is
// charged at its start with every increase its opcodes make and credited at
// its end with every decrease, the most conservative timing. It returns the
// first moment a node is overfilled or sends too many moves. With
// atRelease (Options.LimitAtRelease) the plan has no sender lanes and the
// runner keeps the per-node limit itself, as Drove's job queue does, in
// whatever order it picks: capacity must hold in every such order too.
func simulate(c *Cluster, p *Plan, maxMoves int, atRelease bool, rng *rand.Rand, failures bool) error {
	s := &simRun{c: c, p: p, maxMoves: maxMoves,
		status: make([]int, len(p.Jobs)), ended: make([]JobStatus, len(p.Jobs)), sending: make([]int, len(c.Nodes))}
	s.startFree()
	if err := s.jobEffects(); err != nil {
		return err
	}
	var live []int
	for left := len(p.Jobs); left > 0; {
		startable, canceled := s.startable(atRelease)
		left -= canceled
		if len(startable) > 0 && (len(live) == 0 || rng.IntN(2) == 0) {
			j := startable[rng.IntN(len(startable))]
			live = append(live, j)
			if err := s.start(j); err != nil {
				return err
			}
			continue
		}
		if len(live) == 0 && len(startable) == 0 {
			return fmt.Errorf("deadlock: %d jobs left, none can start", left)
		}
		k := rng.IntN(len(live))
		j := live[k]
		live = append(live[:k], live[k+1:]...)
		left--
		s.end(j, failures && rng.IntN(4) == 0)
	}
	return nil
}

// startFree sets each node's free memory and disk at the start: the free
// memory it reports, or less if its recorded instances leave less.
func (s *simRun) startFree() {
	c := s.c
	s.freeMem = make([]int64, len(c.Nodes))
	s.freeDisk = make([]int64, len(c.Nodes))
	for i, n := range c.Nodes {
		s.freeMem[i] = n.FreeMemory
		recorded := n.TotalMemory - n.ReservedMemory
		for _, in := range c.Instances {
			if in.Primary == i && in.State == Up {
				recorded -= in.Memory
			}
		}
		s.freeMem[i] = min(s.freeMem[i], recorded)
		s.freeDisk[i] = n.FreeDisk
	}
}

// jobEffects works out each job's increases, decreases and sending nodes
// from its opcodes, following the instance as the opcodes move it.
func (s *simRun) jobEffects() error {
	c, p := s.c, s.p
	s.incs = make([][]simEffect, len(p.Jobs))
	s.decs = make([][]simEffect, len(p.Jobs))
	s.senders = make([][]int, len(p.Jobs))
	for j, job := range p.Jobs {
		in := c.Instances[c.InstanceIndex(job.Instance)]
		pri, sec := in.Primary, in.Secondary
		local := in.Storage.UsesLocalDisk()
		var mem int64
		if in.State == Up {
			mem = in.Memory
		}
		for _, op := range job.Opcodes {
			from, to := c.NodeIndex(op.From), c.NodeIndex(op.To)
			if from != pri {
				return fmt.Errorf("job %d: opcode from %s but the instance is on %s", j, op.From, c.Nodes[pri].Name)
			}
			if !slices.Contains(s.senders[j], from) {
				s.senders[j] = append(s.senders[j], from)
			}
			switch op.Kind {
			case OpReplaceDisks:
				if local {
					s.incs[j] = append(s.incs[j], simEffect{to, 0, in.DiskSpace})
					s.decs[j] = append(s.decs[j], simEffect{sec, 0, in.DiskSpace})
				}
				sec = to
			case OpMigrate, OpFailover:
				s.incs[j] = append(s.incs[j], simEffect{to, mem, 0})
				s.decs[j] = append(s.decs[j], simEffect{pri, mem, 0})
				if to == sec {
					pri, sec = sec, pri
				} else {
					if local {
						s.incs[j] = append(s.incs[j], simEffect{to, 0, in.DiskSpace})
						s.decs[j] = append(s.decs[j], simEffect{pri, 0, in.DiskSpace})
					}
					pri = to
				}
			}
		}
	}
	return nil
}

// ready says whether job j's dependencies let it run now, or will never
// let it run (a dependency ended in a status it does not accept).
func (s *simRun) ready(j int) (run, cancel bool) {
	for _, d := range s.p.Jobs[j].Depends {
		if s.status[d.Job] != simDone {
			return false, false
		}
		if len(d.Statuses) > 0 && !slices.Contains(d.Statuses, s.ended[d.Job]) {
			return false, true
		}
	}
	return true, false
}

// startable cancels the waiting jobs that can never run, counting them, and
// lists those that may start now.
func (s *simRun) startable(atRelease bool) (startable []int, canceled int) {
	for j := range s.p.Jobs {
		if s.status[j] != simWaiting {
			continue
		}
		run, cancel := s.ready(j)
		if cancel {
			s.status[j], s.ended[j] = simDone, StatusCanceled
			canceled++
			continue
		}
		full := atRelease && slices.ContainsFunc(s.senders[j], func(n int) bool { return s.sending[n] >= s.maxMoves })
		if run && !full {
			startable = append(startable, j)
		}
	}
	return startable, canceled
}

// start charges job j's increases and sends, then checks every node.
func (s *simRun) start(j int) error {
	s.status[j] = simRunning
	for _, e := range s.incs[j] {
		s.freeMem[e.node] -= e.mem
		s.freeDisk[e.node] -= e.disk
	}
	for _, n := range s.senders[j] {
		s.sending[n]++
	}
	return s.check(fmt.Sprintf("job %d started", j))
}

// end finishes job j: a success credits its decreases, a failure is rolled
// back and undoes its increases.
func (s *simRun) end(j int, failed bool) {
	s.status[j] = simDone
	for _, n := range s.senders[j] {
		s.sending[n]--
	}
	if failed {
		s.ended[j] = StatusError // rolled back: its increases are undone
		for _, e := range s.incs[j] {
			s.freeMem[e.node] += e.mem
			s.freeDisk[e.node] += e.disk
		}
		return
	}
	s.ended[j] = StatusSuccess
	for _, e := range s.decs[j] {
		s.freeMem[e.node] += e.mem
		s.freeDisk[e.node] += e.disk
	}
}

// check returns the first node that sends too many moves or has run out of
// memory or disk it had at the start.
func (s *simRun) check(when string) error {
	c := s.c
	for i := range c.Nodes {
		if s.sending[i] > s.maxMoves {
			return fmt.Errorf("%s: node %s sends %d moves at once (max %d)", when, c.Nodes[i].Name, s.sending[i], s.maxMoves)
		}
		initiallyOK := c.Nodes[i].FreeMemory > 0
		if s.freeMem[i] <= 0 && initiallyOK && c.Nodes[i].Usable() {
			return fmt.Errorf("%s: node %s is out of memory (%d MiB free)", when, c.Nodes[i].Name, s.freeMem[i])
		}
		if s.freeDisk[i] <= 0 && c.Nodes[i].FreeDisk > 0 && c.Nodes[i].Usable() {
			return fmt.Errorf("%s: node %s is out of disk (%d MiB free)", when, c.Nodes[i].Name, s.freeDisk[i])
		}
	}
	return nil
}
