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
	if len(p.Jobs) != len(p.Moved) {
		return fmt.Errorf("%d jobs for %d moved instances", len(p.Jobs), len(p.Moved))
	}
	evac := map[string]bool{}
	for _, n := range p.EvacuatedNodes {
		evac[n] = true
	}
	for j, m := range p.Moved {
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
		for _, n := range m.Nodes {
			node := &c.Nodes[c.NodeIndex(n)]
			if !node.Usable() && n != c.Nodes[in.Primary].Name && (in.Secondary == NoNode || n != c.Nodes[in.Secondary].Name) {
				return fmt.Errorf("%s moved onto unusable node %s", m.Instance, n)
			}
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

// simulate runs the jobs in a random order their dependencies allow, with
// random overlap and, if failures is set, random job failures. A job is
// charged at its start with every increase its opcodes make and credited at
// its end with every decrease, the most conservative timing. It returns the
// first moment a node is overfilled or sends too many moves. With
// atRelease (Options.LimitAtRelease) the plan has no sender lanes and the
// runner keeps the per-node limit itself, as Drove's job queue does, in
// whatever order it picks: capacity must hold in every such order too.
func simulate(c *Cluster, p *Plan, maxMoves int, atRelease bool, rng *rand.Rand, failures bool) error {
	freeMem := make([]int64, len(c.Nodes))
	freeDisk := make([]int64, len(c.Nodes))
	for i, n := range c.Nodes {
		freeMem[i] = n.FreeMemory
		recorded := n.TotalMemory - n.ReservedMemory
		for _, in := range c.Instances {
			if in.Primary == i && in.State == Up {
				recorded -= in.Memory
			}
		}
		freeMem[i] = min(freeMem[i], recorded)
		freeDisk[i] = n.FreeDisk
	}
	type effect struct {
		node      int
		mem, disk int64
	}
	// effects of each job, from the opcodes and the instance's placement.
	incs := make([][]effect, len(p.Jobs))
	decs := make([][]effect, len(p.Jobs))
	senders := make([][]int, len(p.Jobs))
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
			if !slices.Contains(senders[j], from) {
				senders[j] = append(senders[j], from)
			}
			switch op.Kind {
			case OpReplaceDisks:
				if local {
					incs[j] = append(incs[j], effect{to, 0, in.DiskSpace})
					decs[j] = append(decs[j], effect{sec, 0, in.DiskSpace})
				}
				sec = to
			case OpMigrate, OpFailover:
				incs[j] = append(incs[j], effect{to, mem, 0})
				decs[j] = append(decs[j], effect{pri, mem, 0})
				if to == sec {
					pri, sec = sec, pri
				} else {
					if local {
						incs[j] = append(incs[j], effect{to, 0, in.DiskSpace})
						decs[j] = append(decs[j], effect{pri, 0, in.DiskSpace})
					}
					pri = to
				}
			}
		}
	}
	const (
		waiting = iota
		running
		done
	)
	status := make([]int, len(p.Jobs))
	ended := make([]JobStatus, len(p.Jobs))
	sending := make([]int, len(c.Nodes))
	ready := func(j int) (run, cancel bool) {
		for _, d := range p.Jobs[j].Depends {
			if status[d.Job] != done {
				return false, false
			}
			if len(d.Statuses) > 0 && !slices.Contains(d.Statuses, ended[d.Job]) {
				return false, true
			}
		}
		return true, false
	}
	check := func(when string) error {
		for i := range c.Nodes {
			if sending[i] > maxMoves {
				return fmt.Errorf("%s: node %s sends %d moves at once (max %d)", when, c.Nodes[i].Name, sending[i], maxMoves)
			}
			initiallyOK := c.Nodes[i].FreeMemory > 0
			if freeMem[i] <= 0 && initiallyOK && c.Nodes[i].Usable() {
				return fmt.Errorf("%s: node %s is out of memory (%d MiB free)", when, c.Nodes[i].Name, freeMem[i])
			}
			if freeDisk[i] <= 0 && c.Nodes[i].FreeDisk > 0 && c.Nodes[i].Usable() {
				return fmt.Errorf("%s: node %s is out of disk (%d MiB free)", when, c.Nodes[i].Name, freeDisk[i])
			}
		}
		return nil
	}
	var live []int
	for left := len(p.Jobs); left > 0; {
		var startable []int
		for j := range p.Jobs {
			if status[j] != waiting {
				continue
			}
			run, cancel := ready(j)
			if cancel {
				status[j], ended[j] = done, StatusCanceled
				left--
				continue
			}
			full := atRelease && slices.ContainsFunc(senders[j], func(n int) bool { return sending[n] >= maxMoves })
			if run && !full {
				startable = append(startable, j)
			}
		}
		if len(startable) > 0 && (len(live) == 0 || rng.IntN(2) == 0) {
			j := startable[rng.IntN(len(startable))]
			status[j] = running
			live = append(live, j)
			for _, e := range incs[j] {
				freeMem[e.node] -= e.mem
				freeDisk[e.node] -= e.disk
			}
			for _, n := range senders[j] {
				sending[n]++
			}
			if err := check(fmt.Sprintf("job %d started", j)); err != nil {
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
		status[j] = done
		left--
		for _, n := range senders[j] {
			sending[n]--
		}
		if failures && rng.IntN(4) == 0 {
			ended[j] = StatusError // rolled back: its increases are undone
			for _, e := range incs[j] {
				freeMem[e.node] += e.mem
				freeDisk[e.node] += e.disk
			}
			continue
		}
		ended[j] = StatusSuccess
		for _, e := range decs[j] {
			freeMem[e.node] += e.mem
			freeDisk[e.node] += e.disk
		}
	}
	return nil
}
