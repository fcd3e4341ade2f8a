package planner

import "sort"

// Ganeti runs the jobs of an evacuation as they come and trusts that the
// sequential plan is safe in any order. It is not: a job that moves an
// instance onto a node may start before the job that makes room there ends.
// Drove links jobs with dependencies so that running every job as soon as
// its dependencies allow never takes a node over its memory or disk, and no
// node sends more than MaxMovesPerNode moves at once.
//
// Memory and disk are treated as flows. Each node starts with the room it
// has; a job that needs room on a node takes it from that start, or from
// room a finished earlier job freed there, and then depends on that job
// ending in success (had it failed, the room would not be free). Each unit
// of room goes to one job only, so whatever the timing, the room in use
// never exceeds what exists. While a job runs it is charged the most it
// uses at any of its steps (a live migrate holds memory on both nodes until it
// ends).

const (
	resMem = iota
	resDisk
	resCount
)

// jobProfile is what one job does to the nodes it touches.
type jobProfile struct {
	nodes   []int32
	peak    [][resCount]int64 // most used beyond the start, at any step
	final   [][resCount]int64 // used beyond the start when the job ends
	senders []int32
}

func (p *jobProfile) slot(n int32) int {
	for k, x := range p.nodes {
		if x == n {
			return k
		}
	}
	p.nodes = append(p.nodes, n)
	p.peak = append(p.peak, [resCount]int64{})
	p.final = append(p.final, [resCount]int64{})
	return len(p.nodes) - 1
}

// observe records a node's use, relative to the job's start, after a step.
func (p *jobProfile) observe(n int32, mem, disk int64) {
	k := p.slot(n)
	for r, v := range [resCount]int64{mem, disk} {
		if v > p.peak[k][r] {
			p.peak[k][r] = v
		}
		p.final[k][r] = v
	}
}

func (p *jobProfile) sender(n int32) {
	for _, x := range p.senders {
		if x == n {
			return
		}
	}
	p.senders = append(p.senders, n)
}

// room is what a node can still give at the start of the plan: memory must
// stay above zero and disk above zero, Ganeti's hard limits.
func room(n *nodeState) [resCount]int64 {
	r := [resCount]int64{n.unallocated() - 1, n.fDsk - 1}
	for i := range r {
		if r[i] < 0 {
			r[i] = 0
		}
	}
	return r
}

// schedule returns each job's dependencies. initial is the state before any
// job; profiles are in job order. maxMoves 0 adds no sender lanes: the
// job queue keeps the per-node limit (Options.LimitAtRelease).
func schedule(initial []nodeState, profiles []jobProfile, maxMoves int) [][]Dependency {
	type chunk struct {
		job int
		amt int64
	}
	type flow struct {
		left   int64
		chunks []chunk
	}
	flows := map[[2]int32]*flow{} // (node, resource)
	get := func(n int32, r int) *flow {
		key := [2]int32{n, int32(r)}
		f := flows[key]
		if f == nil {
			f = &flow{left: room(&initial[n])[r]}
			flows[key] = f
		}
		return f
	}
	lanes := map[int32][]int{}
	deps := make([][]Dependency, len(profiles))
	for j, p := range profiles {
		need := map[int]bool{} // job -> must succeed
		for k, n := range p.nodes {
			for r := 0; r < resCount; r++ {
				want := p.peak[k][r]
				if want <= 0 {
					continue
				}
				f := get(n, r)
				take := min(want, f.left)
				f.left -= take
				want -= take
				for want > 0 && len(f.chunks) > 0 {
					c := &f.chunks[0]
					take = min(want, c.amt)
					c.amt -= take
					want -= take
					need[c.job] = true
					if c.amt == 0 {
						f.chunks = f.chunks[1:]
					}
				}
				// want > 0 here would mean the sequential plan itself
				// overfilled the node, which the search never commits.
			}
		}
		for _, n := range p.senders {
			l := lanes[n]
			if maxMoves > 0 && len(l) >= maxMoves {
				if _, ok := need[l[len(l)-maxMoves]]; !ok {
					need[l[len(l)-maxMoves]] = false
				}
			}
			lanes[n] = append(l, j)
		}
		for k, n := range p.nodes {
			for r := 0; r < resCount; r++ {
				if freed := p.peak[k][r] - p.final[k][r]; freed > 0 {
					f := get(n, r)
					f.chunks = append(f.chunks, chunk{j, freed})
				}
			}
		}
		for dj, success := range need {
			d := Dependency{Job: dj}
			if success {
				d.Statuses = []JobStatus{StatusSuccess}
			}
			deps[j] = append(deps[j], d)
		}
		sort.Slice(deps[j], func(a, b int) bool { return deps[j][a].Job < deps[j][b].Job })
	}
	return deps
}
