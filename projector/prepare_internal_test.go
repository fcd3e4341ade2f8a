package projector

import (
	"fmt"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// BenchmarkPrepare measures the Go side of a batch's writes (prepare: log
// rows, effects, coalescing, merging) on a batch shaped like the
// projector bench's: mostly progress of a few dozen moves, with their
// opcodes and statuses. It runs without Kafka or Postgres, so its figures
// hold still on a shared machine.
func BenchmarkPrepare(b *testing.B) {
	items := decodeAll(progressBatch(b, 4000), 1)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := prepare(items, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(items)), "ns/event")
}

func progressBatch(tb testing.TB, n int) []kafka.Raw {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var recs []kafka.Raw
	add := func(p events.Payload, req string) {
		e := events.New(p, events.WithTime(t0.Add(time.Duration(len(recs))*time.Second)), events.WithProducer("bench"),
			events.WithReason(events.Reason{Actor: "operator:bench", Why: "bench", RequestID: req}))
		v, err := events.Encode(e)
		if err != nil {
			tb.Fatal(err)
		}
		topic, _ := e.Topic()
		recs = append(recs, kafka.Raw{Topic: topic, Offset: int64(len(recs)), Key: []byte(e.Key), Value: v})
	}
	for m := 0; len(recs) < n; m++ {
		req, vm := fmt.Sprintf("evac-%d", m/20), fmt.Sprintf("vm%d", m)
		op := events.Opcode{OpID: events.OpInstanceMigrate, Instance: vm, From: "n1", To: "n2"}
		add(events.OpcodeDispatched{Request: req, Job: m % 20, Node: "n1", Opcode: op}, req)
		add(events.OpcodeStarted{Request: req, Job: m % 20, Node: "n1"}, req)
		for k := range 24 {
			add(events.Progress{Request: req, Job: m % 20, Instance: vm, Node: "n1", Phase: events.PhaseSync,
				State: events.ProgressRunning, Current: int64(k), Total: 24, Started: t0}, req)
		}
		for _, st := range []events.NodeMoveStatus{events.StatusMigrationSource, events.StatusUp, events.StatusDown} {
			add(events.MoveStatusReported{Request: req, Instance: vm, Node: "n1", Status: st}, req)
		}
		add(events.End{Request: req, Job: m % 20, Instance: vm, Node: "n1", Phase: events.PhaseSync, State: events.EndSuccessful}, req)
		add(events.OpcodeEnded{Request: req, Job: m % 20, Node: "n1", Status: events.JobSuccess}, req)
	}
	return recs[:n]
}
