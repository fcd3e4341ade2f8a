package jobs

import (
	"math"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
)

// Estimate is what a plan is expected to take: the release decision
// (Choose) run forward in time over the moves' estimated transfers, their
// rates shared as planner.ShareLinks shares links, every job assumed to
// succeed; and the lower bound no schedule can beat.
type Estimate struct {
	// FinishSeconds is the expected makespan from the start of the plan
	// (or from now, for the jobs left).
	FinishSeconds float64 `json:"finish_seconds"`
	// LowerBound is the makespan's lower bound (planner.LowerBound).
	LowerBound planner.Bound `json:"lower_bound"`
	// Bytes is what the moves send in all.
	Bytes int64 `json:"bytes"`
}

// simJob is one job of a simulation: its transfers, run one after another.
type simJob struct {
	spec  *events.Job
	ts    []planner.Transfer
	at    int     // the transfer running
	left  float64 // bytes left of it
	state int     // waiting, running, done
}

const (
	simWaiting = iota
	simRunning
	simDone
)

// EstimatePlan simulates releasing a plan's jobs within lim on links,
// from now: jobs marked done (ended or cancelled; done may be nil) are
// behind, every other one ahead, those running now included (from their
// start: an estimate on the safe side). transfers holds each job's
// transfers (see JobTransfers).
func EstimatePlan(jobs []events.Job, transfers [][]planner.Transfer, done []bool, links planner.Links, lim Limits) Estimate {
	var all [][]planner.Transfer
	sim := make([]*simJob, len(jobs))
	for i := range jobs {
		sim[i] = &simJob{spec: &jobs[i], ts: transfers[i]}
		if i < len(done) && done[i] {
			sim[i].state = simDone
			continue
		}
		all = append(all, transfers[i])
	}
	est := Estimate{LowerBound: planner.LowerBound(all, links, lim.Cluster)}
	for _, ts := range all {
		for _, t := range ts {
			est.Bytes += t.Bytes
		}
	}
	now := 0.0
	for {
		start(sim, links, lim)
		var live []*simJob
		var flows []planner.Transfer
		for _, j := range sim {
			if j.state == simRunning {
				live = append(live, j)
				flows = append(flows, j.ts[j.at])
			}
		}
		if len(live) == 0 {
			break // done, or what is left can never run
		}
		rates := planner.ShareLinks(flows, links)
		dt := math.Inf(1)
		for k, j := range live {
			if rates[k] > 0 {
				dt = min(dt, j.left/rates[k])
			}
		}
		if math.IsInf(dt, 1) {
			break // no link carries anything
		}
		now += dt
		for k, j := range live {
			j.left -= rates[k] * dt
			if j.left <= 1e-6*float64(j.ts[j.at].Bytes)+1e-9 {
				j.next()
			}
		}
	}
	est.FinishSeconds = now
	return est
}

// next moves a job to its next transfer with bytes to send, or ends it.
func (j *simJob) next() {
	for j.at++; j.at < len(j.ts); j.at++ {
		if j.ts[j.at].Bytes > 0 {
			j.left = float64(j.ts[j.at].Bytes)
			return
		}
	}
	j.state = simDone
}

// start releases what Choose releases now, as the queue would.
func start(sim []*simJob, links planner.Links, lim Limits) {
	for {
		var cands []Candidate
		var idx []int
		var running []Running
		backlog := NewBacklog()
		for i, j := range sim {
			switch j.state {
			case simRunning:
				running = append(running, Running{Senders: Senders(j.spec), Flow: j.ts[j.at]})
				ahead := append([]planner.Transfer{j.ts[j.at]}, j.ts[j.at+1:]...)
				ahead[0].Bytes = int64(j.left)
				backlog.Add(ahead, links, 1)
			case simWaiting:
				backlog.Add(j.ts, links, 1)
				if ready(sim, i) {
					cands = append(cands, candidate(i, j.spec, j.ts, links))
					idx = append(idx, i)
				}
			}
		}
		chosen := Choose(cands, running, backlog, lim, links)
		if len(chosen) == 0 {
			return
		}
		again := false
		for _, k := range chosen {
			j := sim[idx[k]]
			j.state, j.at = simRunning, -1
			j.next()
			again = again || j.state == simDone // sent nothing: ends at once, may free a slot
		}
		if !again {
			return
		}
	}
}

func ready(sim []*simJob, i int) bool {
	for _, d := range sim[i].spec.Depends {
		k := i + d.Job
		if k >= 0 && k < len(sim) && sim[k].state != simDone {
			return false
		}
	}
	return true
}
