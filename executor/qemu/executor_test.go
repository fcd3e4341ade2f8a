package qemu_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/qemu"
	"github.com/drovehq/drove/test/testenv"
)

// TestLiveMigrationThroughTwoExecutors runs a dispatched migrate of a
// running VM through two executors over Apache Kafka: the
// target's executor runs Receive and announces the incoming VM, the
// source's runs the migration, and the log ends with the source down, the
// target up, the instance placed on the target and the downtime in End.
func TestLiveMigrationThroughTwoExecutors(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	k, kcfg := testenv.Events(t, ctx)
	prod := k.Producer(t, kcfg, "qemu-test-seed")
	ev := func(p events.Payload) events.Envelope {
		return events.New(p, events.WithProducer("test"),
			events.WithReason(events.Reason{Actor: "operator:test", Why: "qemu executor test", RequestID: "req-q"}))
	}

	a, b := newNode(t, "qa", nil), newNode(t, "qb", nil)
	const inst = "vm7"
	a.disk(t, inst, qemu.FillOnce)
	b.disk(t, inst, qemu.FillOnce)
	var inv []events.Envelope
	for _, n := range []string{a.name, b.name} {
		inv = append(inv, ev(events.NodeAnnounced{Name: n, Group: "g1", VMCapable: true,
			Total: events.Resources{MemoryMiB: 4096, DiskMiB: 1 << 16, CPUs: 4}}))
	}
	inv = append(inv, ev(events.InstanceDeclared{Name: inst, Owner: "o", Storage: events.StorageRBD,
		RunState: events.RunRunning, PrimaryNode: a.name,
		Size: events.Size{MemoryMiB: memMiB, VCPUs: 1, DisksMiB: []int64{1}}}))
	if err := prod.Append(ctx, events.TopicInventory, inv...); err != nil {
		t.Fatal(err)
	}
	start(t, a, inst)
	guestWrote(t, a, inst)

	runExecutors(t, ctx, kcfg, a, b)

	if err := prod.Append(ctx, events.TopicOpcodes, ev(events.OpcodeDispatched{Request: "req-q", Job: 0, Index: 0, Node: a.name,
		Opcode: events.Opcode{OpID: events.OpInstanceMigrate, Instance: inst, Mode: events.ModeMigrateLive,
			TargetNode: b.name, From: a.name, To: b.name},
		Facts: testenv.Facts(t, ctx, kcfg, inst, a.name, b.name)})); err != nil {
		t.Fatal(err)
	}

	ended := waitOpcodeEnded(t, ctx, kcfg, a.name)
	if ended.Status != events.JobSuccess {
		t.Fatalf("opcode ended %s: %s", ended.Status, ended.Error)
	}
	if st := b.state(t, inst); st.Status != events.StatusUp {
		t.Errorf("target: %+v, want up", st)
	}
	if st := a.state(t, inst); st.Running {
		t.Errorf("source: %+v, want down", st)
	}

	checkProgressLog(t, ctx, kcfg, inst, a.name, b.name)
}

// runExecutors runs an executor for each node until the test ends.
func runExecutors(t *testing.T, ctx context.Context, kcfg kafka.Config, nodes ...*node) {
	for _, n := range nodes {
		// QEMU's own migration stream does not go through package
		// transfer (see DESIGN.md, threat model): plain, explicitly.
		ex, err := executor.New(executor.Config{Node: n.name, Kafka: kcfg, ProgressInterval: 50 * time.Millisecond, PlainTransfer: true,
			Retry: executor.Retry{Attempts: 2, Initial: 50 * time.Millisecond}}, n.d)
		if err != nil {
			t.Fatal(err)
		}
		ectx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- ex.Run(ectx) }()
		t.Cleanup(func() {
			stop()
			if err := <-done; err != nil {
				t.Errorf("executor %s: %v", n.name, err)
			}
		})
	}
}

// waitOpcodeEnded polls the log until an opcode ends on node.
func waitOpcodeEnded(t *testing.T, ctx context.Context, kcfg kafka.Config, node string) *events.OpcodeEnded {
	t.Helper()
	onNode := func(e events.OpcodeEnded) bool { return e.Node == node }
	for {
		if ended := testenv.Read(t, ctx, kcfg, onNode); len(ended) > 0 {
			return &ended[len(ended)-1]
		}
		select {
		case <-ctx.Done():
			t.Fatal("the migrate did not end in time")
		case <-time.After(100 * time.Millisecond): // polling the log with a deadline
		}
	}
}

// checkProgressLog checks the progress topic: inst ended down on src and up
// on dst, its End is successful and gives the downtime, and its progress
// carried the guest's memory at some rate.
func checkProgressLog(t *testing.T, ctx context.Context, kcfg kafka.Config, inst, src, dst string) {
	t.Helper()
	log := testenv.Envelopes(t, ctx, kcfg, events.TopicProgress)
	final := map[string]events.NodeMoveStatus{}
	for _, s := range testenv.OfType(t, log, func(s events.MoveStatusReported) bool { return s.Instance == inst }) {
		final[s.Node] = s.Status
	}
	var end events.End
	if ends := testenv.OfType(t, log, func(e events.End) bool { return e.Instance == inst }); len(ends) > 0 {
		end = ends[len(ends)-1]
	}
	var maxBytes, maxRate int64
	for _, p := range testenv.OfType(t, log, func(p events.Progress) bool { return p.Instance == inst }) {
		maxBytes, maxRate = max(maxBytes, p.Current), max(maxRate, p.BytesPerSecond)
	}
	if final[src] != events.StatusDown || final[dst] != events.StatusUp {
		t.Errorf("final statuses %v, want %s down and %s up", final, src, dst)
	}
	if end.State != events.EndSuccessful || !strings.Contains(end.Message, "downtime") {
		t.Errorf("end %+v, want successful with the downtime", end)
	}
	if maxBytes < 40<<20 || maxRate == 0 {
		t.Errorf("progress carried %d bytes at most %d B/s, want the guest's memory and a rate", maxBytes, maxRate)
	}
	t.Logf("end: %s", end.Message)
}
