package sim

import (
	"errors"
	"strings"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/drivertest"
)

func newSim(t *testing.T, cfg Config) *Driver {
	t.Helper()
	if cfg.Clock == nil {
		cfg.Clock = InstantClock()
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return d
}

func TestDriverSuite(t *testing.T) {
	drivertest.Run(t, func(t *testing.T) executor.Driver { return newSim(t, Config{}) })
}

func TestDriverSuiteFastClock(t *testing.T) {
	// Real sleeping, sped up: the same contract holds when time passes.
	drivertest.Run(t, func(t *testing.T) executor.Driver {
		return newSim(t, Config{Clock: FastClock(2000)})
	})
}

func replicated() executor.Op {
	return drivertest.OpFor(drivertest.Fixture[0], events.OpInstanceReplaceDisks, drivertest.Node3)
}

func TestTransientFaultResumesTheSend(t *testing.T) {
	d := newSim(t, Config{Faults: []Fault{{Instance: "dt-replicated", Kind: FaultTransient, Times: 2}}})
	op := replicated()
	var firsts []int64
	for attempt := 1; attempt <= 3; attempt++ {
		op.Attempt = attempt
		first := int64(-1)
		_, err := d.Run(t.Context(), op, func(p executor.Progress) {
			if first < 0 && p.Phase == events.PhaseSync {
				first = p.Current
			}
		})
		firsts = append(firsts, first)
		switch {
		case attempt < 3 && (!executor.IsTransient(err) || !errors.Is(err, ErrInjected)):
			t.Fatalf("attempt %d = %v, want an injected transient fault", attempt, err)
		case attempt == 3 && err != nil:
			t.Fatalf("attempt 3 = %v, want success", err)
		}
	}
	if !(firsts[0] == 0 && firsts[1] > 0 && firsts[2] > firsts[1]) {
		t.Fatalf("sync starts per attempt %v: want each retry to resume further on", firsts)
	}
	if p, s, _ := d.Locate(t.Context(), "dt-replicated"); p != drivertest.Node1 || s != drivertest.Node3 {
		t.Fatalf("after success on %s/%s", p, s)
	}
}

func TestFatalFaultRollsBack(t *testing.T) {
	d := newSim(t, Config{})
	if err := d.Inject(Fault{Instance: "dt-replicated", Op: "migrate", Kind: FaultFatal, Phase: "switch"}); err != nil {
		t.Fatal(err)
	}
	op := drivertest.OpFor(drivertest.Fixture[0], events.OpInstanceMigrate, drivertest.Node2)
	_, err := d.Run(t.Context(), op, func(executor.Progress) {})
	if !errors.Is(err, executor.ErrFatal) || executor.IsTransient(err) || !strings.Contains(err.Error(), "switch") {
		t.Fatalf("Run = %v, want a fatal fault in the switch phase", err)
	}
	if p, s, _ := d.Locate(t.Context(), "dt-replicated"); p != drivertest.Node1 || s != drivertest.Node2 {
		t.Fatalf("a fatal fault moved the instance to %s/%s", p, s)
	}
	// Times 0: fatal faults strike every attempt; another opcode kind is spared.
	if _, err := d.Run(t.Context(), op, func(executor.Progress) {}); !errors.Is(err, executor.ErrFatal) {
		t.Fatalf("second Run = %v, want the fault again", err)
	}
	rd := drivertest.OpFor(drivertest.Fixture[0], events.OpInstanceReplaceDisks, drivertest.Node3)
	if _, err := d.Run(t.Context(), rd, func(executor.Progress) {}); err != nil {
		t.Fatalf("replace-disks hit a migrate-only fault: %v", err)
	}
}

func TestResyncRuleAndTotals(t *testing.T) {
	// 10 GiB at 200 MiB/s dirtying 5 MiB/s: the full send takes 51 s and
	// leaves 256 MiB dirty, the first re-sync 6.4 MiB, under 50 MiB.
	const gib = 1 << 30
	d := newSim(t, Config{})
	in := drivertest.Fixture[0]
	in.Size.DisksMiB = []int64{10 * 1024}
	op := drivertest.OpFor(in, events.OpInstanceReplaceDisks, drivertest.Node3)
	var ps []executor.Progress
	res, err := d.Run(t.Context(), op, func(p executor.Progress) { ps = append(ps, p) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Syncs != 3 { // full, one re-sync, final delta
		t.Fatalf("syncs = %d, want 3 (%s)", res.Syncs, res.Message)
	}
	last := ps[len(ps)-1]
	if last.Total <= 10*gib || last.Total > 10*gib+300<<20 || res.Bytes != last.Total {
		t.Fatalf("total %d, sent %d: want the disk plus its small deltas", last.Total, res.Bytes)
	}
	var grew bool
	for _, p := range ps {
		if p.Phase == events.PhaseSync && p.BytesPerSecond == 200<<20 && p.ETA > 0 {
			grew = grew || strings.Contains(p.Message, "re-sync 1")
		}
	}
	if !grew {
		t.Fatalf("no re-sync progress with rate and ETA reported")
	}
}

func TestOneMoveAtATime(t *testing.T) {
	d := newSim(t, Config{Clock: FastClock(10)})
	op := replicated()
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		var once bool
		_, err := d.Run(t.Context(), op, func(executor.Progress) {
			if !once {
				once = true
				close(started)
			}
		})
		done <- err
	}()
	<-started
	_, err := d.Run(t.Context(), drivertest.OpFor(drivertest.Fixture[0], events.OpInstanceMigrate, drivertest.Node2),
		func(executor.Progress) {})
	if !errors.Is(err, ErrBusy) || !errors.Is(err, executor.ErrFatal) {
		t.Fatalf("second move = %v, want ErrBusy", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("first move: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	err := Config{Bandwidth: -1, Faults: []Fault{{Kind: "flaky", Phase: "middle"}}}.Validate()
	for _, want := range []string{"Bandwidth", "Faults[0].Instance", "Faults[0].Kind", "Faults[0].Phase"} {
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate = %v, want it to name %s", err, want)
		}
	}
	d := newSim(t, Config{})
	if err := d.Inject(Fault{Instance: "x", Kind: "boom"}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Inject(bad) = %v", err)
	}
}
