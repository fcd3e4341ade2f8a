package executor_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/sim"
)

// opcodePartitions is the partition count of drove.opcodes in the world.
const opcodePartitions = 3

// nodeOutside returns a node name whose partition of drove.opcodes is not
// node's, and announces it in the inventory.
func (w *world) nodeOutside(node string) string {
	w.t.Helper()
	mine := kafka.PartitionOf(events.TopicOpcodes, node, opcodePartitions)
	for i := 0; ; i++ {
		n := fmt.Sprintf("far%d", i)
		if kafka.PartitionOf(events.TopicOpcodes, n, opcodePartitions) != mine {
			w.append(events.TopicInventory, w.seedEvent(events.NodeAnnounced{Name: n, Group: group, VMCapable: true,
				Total: events.Resources{MemoryMiB: 65536, DiskMiB: 1 << 20, CPUs: 32}}))
			return n
		}
	}
}

// nodeSharing returns another node name whose partition of drove.opcodes
// is node's.
func (w *world) nodeSharing(node string) string {
	mine := kafka.PartitionOf(events.TopicOpcodes, node, opcodePartitions)
	for i := 0; ; i++ {
		n := fmt.Sprintf("twin%d", i)
		if kafka.PartitionOf(events.TopicOpcodes, n, opcodePartitions) == mine {
			return n
		}
	}
}

// opcodeEnds lists the end offset of every partition of drove.opcodes:
// the records (events and transaction markers) each holds.
func (w *world) opcodeEnds() kafka.Positions {
	w.t.Helper()
	r, err := kafka.NewReader(w.ctx, w.kcfg, kafka.ReadOptions{Topics: []string{events.TopicOpcodes}})
	if err != nil {
		w.t.Fatal(err)
	}
	defer r.Close()
	return r.Ends()
}

// TestExecutorFetchesOnlyItsPartition: the cluster's other opcode traffic
// never reaches an executor, nor does the inventory (its dispatches carry
// the facts it needs); it fetches its own partition only.
func TestExecutorFetchesOnlyItsPartition(t *testing.T) {
	w := newWorld(t, instance("vm1", events.StorageZFSReplicated, "n1", "n2", 512, 512))
	other := w.nodeOutside("n1")
	w.inventoryTraffic(200)
	for i := range 30 { // work for another node, in another partition
		w.dispatch(fmt.Sprintf("busy-%d", i), 0, 0, other, migrate("elsewhere", other, "n3"))
	}
	ex := w.start("n1", newSim(t))
	w.dispatch("req-1", 0, 0, "n1", migrate("vm1", "n1", "n2"))
	if got := w.waitEnded("req-1", 0, 0); got.Status != events.JobSuccess {
		t.Fatalf("OpcodeEnded = %+v", got)
	}
	ends := w.opcodeEnds()
	mine := kafka.TopicPartition{Topic: events.TopicOpcodes, Partition: kafka.PartitionOf(events.TopicOpcodes, "n1", opcodePartitions)}
	var all int64
	for _, end := range ends {
		all += end
	}
	fetched := ex.ex.Fetched()[events.TopicOpcodes]
	t.Logf("fetched %d records (%d bytes) of drove.opcodes; its partition holds %d, the topic %d",
		fetched.Records, fetched.Bytes, ends[mine], all)
	if fetched.Records == 0 || fetched.Records > ends[mine] {
		t.Fatalf("fetched %d records, want some and at most the %d of partition %s", fetched.Records, ends[mine], mine)
	}
	if fetched.Records+60 > all { // the 30 dispatches elsewhere and their markers
		t.Fatalf("fetched %d of %d records: other nodes' traffic reached the executor", fetched.Records, all)
	}
	onlyOpcodesAndSettings(t, ex.ex)
}

// inventoryTraffic appends n events of the rest of the cluster to
// drove.inventory (instances declared elsewhere, other nodes'
// heartbeats): traffic an executor must not fetch.
func (w *world) inventoryTraffic(n int) {
	w.t.Helper()
	var evs []events.Envelope
	for i := range n {
		node := fmt.Sprintf("busy%d", i)
		if i%2 == 0 {
			evs = append(evs, w.seedEvent(events.NodeHeartbeat{Node: node, IntervalMS: 5000, Sent: time.Now()}))
			continue
		}
		evs = append(evs, w.seedEvent(instance("vm-"+node, events.StorageZFSReplicated, node, "n3", 512, 512)))
	}
	w.append(events.TopicInventory, evs...)
}

// onlyOpcodesAndSettings fails unless ex fetched nothing but drove.opcodes
// and drove.settings.
func onlyOpcodesAndSettings(t *testing.T, ex *executor.Executor) {
	t.Helper()
	for topic, f := range ex.Fetched() {
		if topic != events.TopicOpcodes && topic != events.TopicSettings && f.Records > 0 {
			t.Errorf("the executor fetched %d records (%d bytes) of %s", f.Records, f.Bytes, topic)
		}
	}
}

// TestRestartResumesFromTheCheckpoint: the checkpoint stays at the oldest
// opcode still owed, so a restarted executor re-reads neither the ended
// history before it nor from offset zero, and still runs what it owes.
func TestRestartResumesFromTheCheckpoint(t *testing.T) {
	w := newWorld(t,
		instance("quick", events.StorageZFSReplicated, "n1", "n2", 512, 512),
		instance("owed", events.StorageZFSReplicated, "n1", "n2", 512, 1<<20))
	linger := func(c *executor.Config) { c.CheckpointLinger = time.Nanosecond }
	first := w.start("n1", newSim(t), linger)
	for i := range 10 { // history: moves there and back, each ended
		from, to := "n1", "n2"
		if i%2 == 1 {
			from, to = to, from
		}
		w.dispatch(fmt.Sprintf("old-%d", i), 0, 0, from, migrate("quick", from, to))
		if from != "n1" { // n2 has no executor: write its end as it would
			w.append(events.TopicOpcodes, w.ended(fmt.Sprintf("old-%d", i), from))
			w.append(events.TopicInventory, w.seedEvent(events.InstancePlaced{Instance: "quick", Group: group,
				PrimaryNode: "n1", SecondaryNode: "n2", PreviousGroup: group, PreviousPrimary: "n2", PreviousSecondary: "n1"}))
			continue
		}
		w.waitEnded(fmt.Sprintf("old-%d", i), 0, 0)
	}
	w.inventoryTraffic(200) // the cluster's inventory grows too; a restart reads none of it
	owedDisp := w.dispatch("req-owed", 0, 0, "n1", replaceDisks("owed", "n1", "n3"))
	w.waitFor(events.TopicOpcodes, "req-owed to start", func(evs []events.Envelope) bool {
		return len(payloads[events.OpcodeStarted](ofRequest(evs, "req-owed"))) == 1
	})
	at := w.offsetOf(events.TopicOpcodes, owedDisp.ID)
	w.waitCheckpoint("n1", at)
	first.shutdown(t)

	fast := newSim(t)
	second := w.start("n1", &counting{Driver: fast, d: newSim(t)}, linger)
	if got := w.waitEnded("req-owed", 0, 0); got.Status != events.JobSuccess {
		t.Fatalf("owed opcode ended %+v", got)
	}
	if n := fast.Runs("quick"); n != 0 {
		t.Fatalf("the restarted executor ran 'quick' %d times; its opcodes had all ended", n)
	}
	fetched := second.ex.Fetched()[events.TopicOpcodes]
	if fetched.Records == 0 || fetched.Records > w.opcodeEnds()[at.tp]-at.off {
		t.Fatalf("restarted executor fetched %d records; only the %d from its checkpoint %d on were due",
			fetched.Records, w.opcodeEnds()[at.tp]-at.off, at.off)
	}
	onlyOpcodesAndSettings(t, second.ex)
	t.Logf("restart read %d records from offset %d; the partition holds %d", fetched.Records, at.off, w.opcodeEnds()[at.tp])
}

// ended is an OpcodeEnded of node as its executor would write it.
func (w *world) ended(req, node string) events.Envelope {
	return events.New(events.OpcodeEnded{Request: req, Job: 0, Index: 0, Node: node, Status: events.JobSuccess},
		events.WithProducer("executor/"+node),
		events.WithReason(events.Reason{Actor: "executor/" + node, Why: "done", RequestID: req}))
}

type logPos struct {
	tp  kafka.TopicPartition
	off int64
}

// offsetOf finds event id in topic.
func (w *world) offsetOf(topic, id string) logPos {
	w.t.Helper()
	recs, err := kafka.ReadAll(w.ctx, w.kcfg, topic)
	if err != nil {
		w.t.Fatal(err)
	}
	for _, r := range recs {
		if r.Event.ID == id {
			return logPos{kafka.TopicPartition{Topic: r.Topic, Partition: r.Partition}, r.Offset}
		}
	}
	w.t.Fatalf("event %s not in %s", id, topic)
	return logPos{}
}

// waitCheckpoint waits until node's checkpoint is at.
func (w *world) waitCheckpoint(node string, at logPos) {
	w.t.Helper()
	cp, err := kafka.OpenCheckpoint(w.kcfg, events.ExecutorGroup(node))
	if err != nil {
		w.t.Fatal(err)
	}
	defer cp.Close()
	for {
		got, err := cp.Load(w.ctx, at.tp.Topic)
		if err != nil {
			w.t.Fatal(err)
		}
		if got[at.tp] == at.off {
			return
		}
		select {
		case <-w.ctx.Done():
			w.t.Fatalf("checkpoint of %s: %v, want %d (the oldest record of owed work)", node, got, at.off)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// relaying is the simulator with a target side: a move's source waits for
// its target's address, which the target announces as soon as it learns
// of the move.
type relaying struct{ executor.Driver }

func (r relaying) Run(ctx context.Context, op executor.Op, report func(executor.Progress)) (executor.Result, error) {
	if op.AwaitReceiver != nil {
		if _, err := op.AwaitReceiver(ctx); err != nil {
			return executor.Result{}, err
		}
	}
	return r.Driver.Run(ctx, op, report)
}

func (relaying) Receive(ctx context.Context, _ executor.Op, listening func(string), _ func(executor.Progress)) error {
	listening("127.0.0.1:9")
	<-ctx.Done()
	return ctx.Err()
}

// TestTargetInAnotherPartitionLearnsOfTheMove: the dispatch lies in the
// source's partition; the target, reading only its own, hears of it from
// the source's relay and announces its receiver, so the move completes.
func TestTargetInAnotherPartitionLearnsOfTheMove(t *testing.T) {
	w := newWorld(t)
	far := w.nodeOutside("n1")
	w.append(events.TopicInventory, w.seedEvent(instance("vm1", events.StorageZFSReplicated, "n1", far, 512, 512)))
	plain := func(c *executor.Config) { c.PlainTransfer = true }
	w.start("n1", relaying{newSim(t)}, plain)
	w.start(far, relaying{newSim(t)}, plain)
	w.dispatch("req-1", 0, 0, "n1", migrate("vm1", "n1", far))
	if got := w.waitEnded("req-1", 0, 0); got.Status != events.JobSuccess {
		t.Fatalf("OpcodeEnded = %+v, want success", got)
	}
	ready := payloads[events.ReceiverReady](w.read(events.TopicOpcodes))
	if len(ready) == 0 || ready[0].Target != far {
		t.Fatalf("ReceiverReady = %+v, want %s's", ready, far)
	}
}

// gated holds a move's source until release is closed.
type gated struct {
	relaying
	release chan struct{}
}

func (g gated) Run(ctx context.Context, op executor.Op, report func(executor.Progress)) (executor.Result, error) {
	select {
	case <-g.release:
	case <-ctx.Done():
		return executor.Result{}, ctx.Err()
	}
	return g.relaying.Run(ctx, op, report)
}

// TestRestartedTargetResumesItsReceiver: the target side of a move is work
// its node owes too, so the target's checkpoint stays before the relayed
// dispatch; restarted, it listens again and announces anew, and the move
// completes.
func TestRestartedTargetResumesItsReceiver(t *testing.T) {
	w := newWorld(t)
	far := w.nodeOutside("n1")
	w.append(events.TopicInventory, w.seedEvent(instance("vm1", events.StorageZFSReplicated, "n1", far, 512, 512)))
	plain := func(c *executor.Config) { c.PlainTransfer = true; c.CheckpointLinger = time.Nanosecond }
	release := make(chan struct{})
	w.start("n1", gated{relaying{newSim(t)}, release}, plain)
	target := w.start(far, relaying{newSim(t)}, plain)
	// History in the target's partition that it owes nothing for: another
	// node's records, which share its partition.
	twin := w.nodeSharing(far)
	for i := range 10 {
		w.append(events.TopicOpcodes, events.New(events.OpcodeStarted{Request: "old", Job: i, Node: twin},
			events.WithProducer("executor/"+twin),
			events.WithReason(events.Reason{Actor: "executor/" + twin, Why: "history", RequestID: "old"})))
	}
	w.dispatch("req-1", 0, 0, "n1", migrate("vm1", "n1", far))
	ready := func(n int) func([]events.Envelope) bool {
		return func(evs []events.Envelope) bool { return len(payloads[events.ReceiverReady](evs)) >= n }
	}
	w.waitFor(events.TopicOpcodes, "the target to listen", ready(1))
	var relay events.Envelope
	for _, e := range w.read(events.TopicOpcodes) {
		if e.Type == events.TypeTargetNotified {
			relay = e
		}
	}
	at := w.offsetOf(events.TopicOpcodes, relay.ID)
	if at.off < 20 {
		t.Fatalf("the relay is at %d, after less history than written", at.off)
	}
	w.waitCheckpoint(far, at) // held back by the receiver it owes
	target.shutdown(t)

	again := w.start(far, relaying{newSim(t)}, plain)
	w.waitFor(events.TopicOpcodes, "the restarted target to listen again", ready(2))
	if f := again.ex.Fetched()[events.TopicOpcodes]; f.Records > w.opcodeEnds()[at.tp]-at.off {
		t.Fatalf("the restarted target fetched %d records, more than the %d from its checkpoint on",
			f.Records, w.opcodeEnds()[at.tp]-at.off)
	}
	close(release)
	if got := w.waitEnded("req-1", 0, 0); got.Status != events.JobSuccess {
		t.Fatalf("OpcodeEnded = %+v, want success", got)
	}
}

// dropping is the simulator with replicas to drop: it records which
// instances' replicas the executor asked it to drop.
type dropping struct {
	*sim.Driver
	dropped chan string
}

func (d dropping) DropReplica(_ context.Context, instance string) error {
	d.dropped <- instance
	return nil
}

// TestOldSecondaryHearsItsReplicaIsDropped: a replace-disks on n1 moves
// vm1's replica from a node in another partition to n3; that node's
// executor, which reads no inventory, learns it from the relay of the
// placement and drops its replica.
func TestOldSecondaryHearsItsReplicaIsDropped(t *testing.T) {
	w := newWorld(t)
	far := w.nodeOutside("n1")
	w.append(events.TopicInventory, w.seedEvent(instance("vm1", events.StorageZFSReplicated, "n1", far, 512, 512)))
	w.start("n1", newSim(t))
	old := dropping{newSim(t), make(chan string, 4)}
	oldEx := w.start(far, old)
	w.dispatch("req-1", 0, 0, "n1", replaceDisks("vm1", "n1", "n3"))
	if got := w.waitEnded("req-1", 0, 0); got.Status != events.JobSuccess {
		t.Fatalf("OpcodeEnded = %+v, want success", got)
	}
	select {
	case got := <-old.dropped:
		if got != "vm1" {
			t.Fatalf("dropped the replica of %s, want vm1", got)
		}
	case <-w.ctx.Done():
		t.Fatalf("%s never dropped its replica of vm1", far)
	}
	onlyOpcodesAndSettings(t, oldEx.ex)
}

// TestDispatchWithoutFactsFails: a dispatch that carries no facts of its
// instance (older than them) ends with an error; the executor does not
// guess a size or storage kind.
func TestDispatchWithoutFactsFails(t *testing.T) {
	w := newWorld(t, instance("vm1", events.StorageZFSReplicated, "n1", "n2", 512, 512))
	w.start("n1", newSim(t))
	w.append(events.TopicOpcodes, events.New(events.OpcodeDispatched{Request: "req-1", Node: "n1", Opcode: migrate("vm1", "n1", "n2")},
		events.WithProducer("drove-planner"), events.WithReason(events.Reason{Actor: "planner", Why: "old", RequestID: "req-1"})))
	got := w.waitEnded("req-1", 0, 0)
	if got.Status != events.JobError || !strings.Contains(got.Error, "carries no facts") {
		t.Fatalf("OpcodeEnded = %+v, want an error naming the missing facts", got)
	}
}
