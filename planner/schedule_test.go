package planner

import (
	"reflect"
	"testing"
)

func TestScheduleMemoryFlowsFromTheJobThatFreesIt(t *testing.T) {
	// Node 0 has 61 MiB: room for 60. Job 0 frees 100 there, job 1 needs
	// 150 (60 from the room, 90 from job 0), job 2 needs 10 (job 0's rest)
	// and job 3 needs 5, which nothing left can give but job 0's... none:
	// job 0 gave 100, 90+10 are taken, so job 3 must wait for nothing it
	// cannot get; the sequential plan would never commit it, so here it
	// only needs what is left.
	initial := []nodeState{{tMem: 61, iMem: 0}}
	free := func(n int32, mem int64) jobProfile {
		var p jobProfile
		p.observe(n, -mem, 0)
		return p
	}
	use := func(n int32, mem int64) jobProfile {
		var p jobProfile
		p.observe(n, mem, 0)
		return p
	}
	deps := schedule(initial, []jobProfile{free(0, 100), use(0, 150), use(0, 10)}, 10)
	want := [][]Dependency{nil, {{Job: 0, Statuses: []JobStatus{StatusSuccess}}}, {{Job: 0, Statuses: []JobStatus{StatusSuccess}}}}
	if !reflect.DeepEqual(deps, want) {
		t.Fatalf("got %+v, want %+v", deps, want)
	}
}

func TestScheduleLimitsMovesPerSender(t *testing.T) {
	initial := []nodeState{{tMem: 1000, fDsk: 1000}}
	var profs []jobProfile
	for i := 0; i < 5; i++ {
		var p jobProfile
		p.sender(0)
		profs = append(profs, p)
	}
	deps := schedule(initial, profs, 2)
	want := [][]Dependency{nil, nil, {{Job: 0}}, {{Job: 1}}, {{Job: 2}}}
	if !reflect.DeepEqual(deps, want) {
		t.Fatalf("got %+v, want %+v", deps, want)
	}
}
