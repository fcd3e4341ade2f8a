package jobs

import (
	"fmt"
	"slices"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
)

const mibps = 1 << 20

// linksOf gives named nodes their links (send, receive, bytes a second);
// every other node has 100 MiB/s each way.
func linksOf(named map[string][2]int64) planner.Links {
	return func(n string) planner.Link {
		if l, ok := named[n]; ok {
			return planner.Link{Send: l[0], Receive: l[1]}
		}
		return planner.Link{Send: 100 * mibps, Receive: 100 * mibps}
	}
}

// move is a one-opcode job sending bytes from → to.
func move(i int, from, to string, bytes int64, links planner.Links) Candidate {
	j := events.Job{Index: i, Opcodes: []events.Opcode{migrate(fmt.Sprint("i", i), from, to)}}
	return candidate(i, &j, []planner.Transfer{{From: from, To: to, Bytes: bytes}}, links)
}

// backlogOf is the link time ahead of the candidates, as a pass counts it
// (every job not done, the candidates included), plus extra.
func backlogOf(cands []Candidate, links planner.Links, extra ...planner.Transfer) Backlog {
	b := NewBacklog()
	for _, c := range cands {
		b.Add(c.Transfers, links, 1)
	}
	b.Add(extra, links, 1)
	return b
}

// The order the queue releases ready jobs in, each rule alone: the job on
// the busiest link first (or whose own chain is longer), then the one
// whose links are busier in all, then the longest, then plan order. The
// links are idle and the caps wide, so only the order is tested.
func TestChooseOrder(t *testing.T) {
	t.Parallel()
	// s and r are fast (1000 MiB/s), so two moves on them both fit and
	// only the order is left to test; every other node has 100 MiB/s.
	links := linksOf(map[string][2]int64{"s": {1000 * mibps, 1000 * mibps}, "r": {1000 * mibps, 1000 * mibps}})
	gib := int64(1 << 30) // 10.24 s at 100 MiB/s
	for _, c := range []struct {
		name  string
		cands []Candidate
		extra []planner.Transfer // other work ahead on the links
		want  []int
	}{
		{"the busiest sender first", []Candidate{move(0, "s1", "r1", gib, links), move(1, "s2", "r2", gib, links)},
			[]planner.Transfer{{From: "s2", To: "r9", Bytes: 10 * gib}}, []int{1, 0}},
		{"the busiest receiver first", []Candidate{move(0, "s1", "r1", gib, links), move(1, "s2", "r2", gib, links)},
			[]planner.Transfer{{From: "s9", To: "r2", Bytes: 10 * gib}}, []int{1, 0}},
		{"a chain longer than any link's backlog first", []Candidate{move(0, "s1", "r1", gib, links),
			move(1, "s2", "r2", 30*gib, links)}, []planner.Transfer{{From: "s1", To: "r9", Bytes: 10 * gib}}, []int{1, 0}},
		{"both on the busiest receiver: the busier other end first", []Candidate{move(0, "s1", "r", gib, links),
			move(1, "s2", "r", gib, links)}, []planner.Transfer{{From: "s9", To: "r", Bytes: 50 * gib},
			{From: "s2", To: "r9", Bytes: 2 * gib}}, []int{1, 0}},
		{"then the longest", []Candidate{move(0, "s", "r1", gib, links), move(1, "s", "r2", 2*gib, links)},
			[]planner.Transfer{{From: "s", To: "r9", Bytes: 30 * gib}, {From: "s9", To: "r1", Bytes: gib}}, []int{1, 0}},
		{"then plan order", []Candidate{move(2, "s1", "r1", gib, links), move(0, "s2", "r2", gib, links),
			move(1, "s3", "r3", gib, links)}, nil, []int{1, 2, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := Choose(c.cands, nil, backlogOf(c.cands, links, c.extra...), Limits{Cluster: 10, PerNode: 10}, links)
			if !slices.Equal(got, c.want) {
				t.Fatalf("Choose released %v, want %v", got, c.want)
			}
		})
	}
}

// The caps: the cluster limit counts the moves running in every request,
// the per-node limit each sender's; plan order (the baseline) keeps the
// caps and ignores the estimates.
func TestChooseLimits(t *testing.T) {
	t.Parallel()
	// s sends fast enough for both its moves: only the caps hold them.
	links := linksOf(map[string][2]int64{"s": {1000 * mibps, 1000 * mibps}})
	gib := int64(1 << 30)
	cands := []Candidate{move(0, "s", "r1", gib, links), move(1, "s", "r2", gib, links),
		move(2, "t", "r3", 8*gib, links), move(3, "u", "r4", gib, links)}
	elsewhere := Running{Senders: []string{"x"}, Flow: planner.Transfer{From: "x", To: "y", Bytes: gib}}
	fromS := Running{Senders: []string{"s"}, Flow: planner.Transfer{From: "s", To: "y", Bytes: gib}}
	for _, c := range []struct {
		name    string
		running []Running
		lim     Limits
		want    []int
	}{
		{"no cap reached: all, the most urgent first", nil, Limits{Cluster: 10, PerNode: 2}, []int{2, 3, 0, 1}},
		{"one a node", nil, Limits{Cluster: 10, PerNode: 1}, []int{2, 3, 0}},
		{"the cluster's two", nil, Limits{Cluster: 2, PerNode: 2}, []int{2, 3}},
		{"a running move elsewhere takes a cluster slot", []Running{elsewhere}, Limits{Cluster: 2, PerNode: 2}, []int{2}},
		{"a running move from s takes s's slot", []Running{fromS}, Limits{Cluster: 10, PerNode: 1}, []int{2, 3}},
		{"the cluster full: none", []Running{elsewhere, fromS}, Limits{Cluster: 2, PerNode: 2}, nil},
		{"plan order within the caps", nil, Limits{Cluster: 3, PerNode: 1, IndexOrder: true}, []int{0, 2, 3}},
		{"no cluster cap", nil, Limits{PerNode: 5}, []int{2, 3, 0, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := Choose(cands, c.running, backlogOf(cands, links), c.lim, links)
			if !sameInts(got, c.want) {
				t.Fatalf("Choose released %v, want %v", got, c.want)
			}
		})
	}
}

// Room on the links (and so `auto`, PerNode 0): a move goes only if it
// would get more than half its own rate next to the moves running, or
// add a quarter of it to what the links carry; a move that sends nothing
// always goes. A rate an executor measured holds its share of the links.
func TestChooseWaitsForRoomOnTheLinks(t *testing.T) {
	t.Parallel()
	gib := int64(1 << 30)
	even := linksOf(nil)
	fast := linksOf(map[string][2]int64{"s": {1000 * mibps, 1000 * mibps}})
	running := func(from, to string, rate float64) Running {
		return Running{Senders: []string{from}, Flow: planner.Transfer{From: from, To: to, Bytes: gib}, Rate: rate}
	}
	for _, c := range []struct {
		name    string
		links   planner.Links
		running []Running
		cands   []Candidate
		want    []int
	}{
		{"a second move would halve a busy link: it waits, an idle one goes", even,
			[]Running{running("s", "r1", 0)}, []Candidate{move(0, "s", "r2", gib, even), move(1, "t", "r3", gib, even)}, []int{1}},
		{"a fast sender feeds slow receivers side by side", fast,
			[]Running{running("s", "r1", 0)}, []Candidate{move(0, "s", "r2", gib, fast), move(1, "s", "r3", gib, fast)}, []int{0, 1}},
		{"a move measured slow leaves room", even,
			[]Running{running("s", "r1", 10*mibps)}, []Candidate{move(0, "s", "r2", gib, even)}, []int{0}},
		{"a move measured at the link's rate leaves none", even,
			[]Running{running("s", "r1", 100*mibps)}, []Candidate{move(0, "s", "r2", gib, even)}, nil},
		{"a move that sends nothing always goes", even,
			[]Running{running("s", "r1", 0)}, []Candidate{move(0, "s", "r2", 0, even)}, []int{0}},
		{"two new moves on one idle link: the first goes, the second would halve it", even,
			nil, []Candidate{move(0, "s", "r1", gib, even), move(1, "s", "r2", gib, even)}, []int{0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := Choose(c.cands, c.running, backlogOf(c.cands, c.links), Limits{Cluster: 10}, c.links)
			if !sameInts(got, c.want) {
				t.Fatalf("Choose released %v, want %v", got, c.want)
			}
		})
	}
}

// What a move sends, by opcode and storage kind, as the drivers move each.
func TestMoveBytes(t *testing.T) {
	t.Parallel()
	in := func(kind events.StorageKind, run events.RunState) *events.InstanceDeclared {
		return &events.InstanceDeclared{Name: "a", Storage: kind, RunState: run,
			Size: events.Size{MemoryMiB: 2048, DisksMiB: []int64{1024, 3072}}}
	}
	const disks, memory = 4096 << 20, 2048 << 20
	for _, c := range []struct {
		name string
		op   events.OpID
		in   *events.InstanceDeclared
		want int64
	}{
		{"replace-disks copies the replica's disks", events.OpInstanceReplaceDisks, in(events.StorageDRBD, events.RunRunning), disks},
		{"zfs-local's disks go with a migrate", events.OpInstanceMigrate, in(events.StorageZFSLocal, events.RunRunning), disks},
		{"zfs-local stopped: the disks still", events.OpInstanceMigrate, in(events.StorageZFSLocal, events.RunStopped), disks},
		{"shared storage running: the memory", events.OpInstanceMigrate, in(events.StorageRBD, events.RunRunning), memory},
		{"drbd running: the memory", events.OpInstanceMigrate, in(events.StorageDRBD, events.RunRunning), memory},
		{"shared storage stopped: nothing", events.OpInstanceMigrate, in(events.StorageRBD, events.RunStopped), 0},
		{"a failover: nothing", events.OpInstanceFailover, in(events.StorageDRBD, events.RunRunning), 0},
		{"an instance not in the inventory: nothing", events.OpInstanceMigrate, nil, 0},
	} {
		if got := MoveBytes(events.Opcode{OpID: c.op, Instance: "a"}, c.in); got != c.want {
			t.Errorf("%s: MoveBytes = %d, want %d", c.name, got, c.want)
		}
	}
}

// EstimatePlan runs the release forward: caps serialise moves, a
// dependency waits for its job, jobs already done are behind, and the
// bound is planner.LowerBound's.
func TestEstimateFollowsTheRules(t *testing.T) {
	t.Parallel()
	links := linksOf(nil)
	gib := int64(100*mibps) * 10 // 10 s at 100 MiB/s
	plan := func(deps ...[]events.Dependency) []events.Job {
		var out []events.Job
		for i := range 3 {
			j := events.Job{Index: i, Opcodes: []events.Opcode{migrate(fmt.Sprint("i", i), fmt.Sprint("s", i), fmt.Sprint("r", i))}}
			if i < len(deps) {
				j.Depends = deps[i]
			}
			out = append(out, j)
		}
		return out
	}
	transfers := func(js []events.Job) [][]planner.Transfer {
		var out [][]planner.Transfer
		for _, j := range js {
			out = append(out, []planner.Transfer{{From: j.Opcodes[0].From, To: j.Opcodes[0].To, Bytes: gib}})
		}
		return out
	}
	for _, c := range []struct {
		name   string
		jobs   []events.Job
		done   []bool
		lim    Limits
		finish float64
		bytes  int64
	}{
		{"three at once", plan(), nil, Limits{Cluster: 5, PerNode: 2}, 10, 3 * gib},
		{"one at a time", plan(), nil, Limits{Cluster: 1, PerNode: 2}, 30, 3 * gib},
		{"a chain of dependencies", plan(nil, after(-1), after(-1)), nil, Limits{Cluster: 5, PerNode: 2}, 30, 3 * gib},
		{"one done already", plan(), []bool{true}, Limits{Cluster: 1, PerNode: 2}, 20, 2 * gib},
		{"all done", plan(), []bool{true, true, true}, Limits{Cluster: 1, PerNode: 2}, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			est := EstimatePlan(c.jobs, transfers(c.jobs), c.done, links, c.lim)
			if est.FinishSeconds < c.finish-1e-6 || est.FinishSeconds > c.finish+1e-6 || est.Bytes != c.bytes {
				t.Fatalf("estimate %+v; want finish %.0f s, %d bytes", est, c.finish, c.bytes)
			}
			if est.LowerBound.Seconds > est.FinishSeconds+1e-9 {
				t.Fatalf("the bound %.2f s is above the estimate %.2f s", est.LowerBound.Seconds, est.FinishSeconds)
			}
		})
	}
}
