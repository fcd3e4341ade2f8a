package zfs

import (
	"testing"
	"time"
)

// A switch's overhead is its downtime (the workload's when longer) less
// the final delta's bytes at the link's rate, the fastest of the phase's
// sends big enough to show it: a small final send's own setup stays in.
func TestOverheadKeepsTheFinalSendsSetup(t *testing.T) {
	const mib = 1 << 20
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	cases := []struct {
		name       string
		down, work time.Duration
		syncs      []SyncReport
		final      int64
		want       time.Duration
	}{
		{"a catch-up shows the rate", ms(160), ms(190),
			[]SyncReport{{Bytes: 100 * mib, Duration: ms(500)}, {Bytes: mib, Duration: ms(50), Final: true}}, mib, ms(185)},
		{"only a small final send", ms(160), 0,
			[]SyncReport{{Bytes: 512 << 10, Duration: ms(50), Final: true}}, 512 << 10, ms(160)},
		{"a big final send shows its own rate", ms(1200), 0,
			[]SyncReport{{Bytes: 100 * mib, Duration: ms(1000), Final: true}}, 100 * mib, ms(200)},
		{"a stopped instance", 0, 0, []SyncReport{{Bytes: 100 * mib, Duration: ms(500)}}, mib, 0},
	}
	for _, c := range cases {
		m := &move{rep: MoveReport{Downtime: c.down, WorkloadDowntime: c.work, Syncs: c.syncs, FinalDelta: c.final}}
		if got := m.overhead(); got != c.want {
			t.Errorf("%s: overhead %s, want %s", c.name, got, c.want)
		}
	}
}
