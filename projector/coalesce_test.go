package projector_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	. "github.com/drovehq/drove/projector"
)

// rowHammer returns a log whose events write the same few rows many times,
// in an order the seed picks: progress of three moves at times that repeat,
// go back, and differ by less than a microsecond (Postgres keeps
// microseconds), with errors now and then; ends between them; syncs that
// restart; node statuses at shuffled times; and duplicated records. It is
// the log on which a fold that coalesces a batch's effects could differ from
// one that runs each event's.
func rowHammer(seed uint64) []events.Envelope {
	rng := rand.New(rand.NewPCG(seed, 1))
	base := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	at := func() time.Time {
		// Few distinct seconds, so ties are common; nanoseconds that
		// Postgres drops, so ties are also hidden in different Go times.
		return base.Add(time.Duration(rng.IntN(8))*time.Second + []time.Duration{0, 0, 300, 999, 1000, 1500}[rng.IntN(6)])
	}
	mk := func(p events.Payload, t time.Time, request string) events.Envelope {
		return events.New(p, events.WithProducer("test"), events.WithTime(t),
			events.WithReason(events.Reason{Actor: "operator:alice", Why: "testing", RequestID: request}))
	}
	phases := []string{events.PhaseBegin, events.PhaseSync, events.PhaseSync, events.PhaseSync, events.PhaseSwitch}
	var out []events.Envelope
	for range 400 {
		r := fmt.Sprintf("req-%d", rng.IntN(2))
		job := rng.IntN(2)
		vm := fmt.Sprintf("vm%d", job)
		switch n := rng.IntN(100); {
		case n < 60:
			// A row's instance is its first event's: vary it to see that.
			p := events.Progress{Request: r, Job: job, Instance: vm + []string{"", "b"}[rng.IntN(2)], Node: "n1", Phase: phases[rng.IntN(len(phases))],
				State: events.ProgressRunning, Current: rng.Int64N(100), Total: 100 + rng.Int64N(3),
				ETASeconds: float64(rng.IntN(10)), BytesPerSecond: rng.Int64N(1000),
				Message: fmt.Sprintf("m%d", rng.IntN(5))}
			if rng.IntN(5) == 0 {
				p.Error = fmt.Sprintf("e%d", rng.IntN(100))
			}
			if rng.IntN(2) == 0 {
				p.Started = base.Add(time.Duration(rng.IntN(3))*time.Second + time.Duration(rng.IntN(2))*400)
			}
			out = append(out, mk(p, at(), r))
		case n < 68:
			out = append(out, mk(events.End{Request: r, Job: job, Instance: vm, Node: "n1", Phase: events.PhaseSwitch,
				State:   []events.EndState{events.EndPaused, events.EndSuccessful, events.EndFailed}[rng.IntN(3)],
				Message: fmt.Sprintf("end%d", rng.IntN(3))}, at(), r))
		case n < 72 && r == "req-0": // req-1's rows are only ever made by progress and ends
			op := events.Opcode{OpID: events.OpInstanceMigrate, Instance: vm, From: "n1", To: "n2"}
			out = append(out, mk(events.OpcodeDispatched{Request: r, Job: job, Node: "n1", Opcode: op}, at(), r))
		case n < 92:
			st := []events.NodeMoveStatus{events.StatusMigrationSource, events.StatusUp, events.StatusDown}[rng.IntN(3)]
			out = append(out, mk(events.MoveStatusReported{Request: r, Instance: vm,
				Node: fmt.Sprintf("n%d", 1+rng.IntN(2)), Status: st}, at(), r))
		default:
			if len(out) > 0 { // a producer's retried commit: the same event again
				out = append(out, out[rng.IntN(len(out))])
			}
		}
	}
	return out
}

// TestCoalescingChangesNothing folds logs whose events hit the same rows
// again and again with batches of 1 (each event's effects run alone, nothing
// to coalesce), 7 and 500, and compares every table.
func TestCoalescingChangesNothing(t *testing.T) {
	e := newEnv(t)
	for seed := range uint64(4) {
		evs := append(rowHammer(seed), scenario()...)
		evs = append(evs, instanceMigration()...)
		var recs []kafka.Raw
		offsets := map[string]int64{}
		for _, v := range evs {
			topic, err := v.Topic()
			if err != nil {
				t.Fatal(err)
			}
			b, err := events.Encode(v)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, kafka.Raw{Topic: topic, Offset: offsets[topic], Key: []byte(v.Key), Value: b})
			offsets[topic]++
		}
		sums := map[int]map[string]Checksum{}
		for _, batch := range []int{1, 7, 500} {
			schema := fmt.Sprintf("coalesce_%d_%d", seed, batch)
			if err := ApplySchema(e.ctx, e.pool, schema); err != nil {
				t.Fatal(err)
			}
			if err := Fold(e.ctx, e.pool, schema, recs, batch); err != nil {
				t.Fatal(err)
			}
			s, err := Checksums(e.ctx, e.pool, schema)
			if err != nil {
				t.Fatal(err)
			}
			sums[batch] = s
		}
		for _, name := range ComparedTables {
			for _, batch := range []int{7, 500} {
				if sums[batch][name] != sums[1][name] {
					t.Errorf("seed %d: %s folded in batches of %d differs from batches of 1: %+v vs %+v",
						seed, name, batch, sums[batch][name], sums[1][name])
				}
			}
		}
		// The log did hit rows with errors, ends and syncs; a vacuous
		// equality would prove nothing.
		var withErr, ended, syncs int
		if err := Get(e.ctx, e.pool, fmt.Sprintf("coalesce_%d_1", seed),
			`SELECT count(*) FILTER (WHERE error_detail <> ''), count(*) FILTER (WHERE progress_end_state <> ''),
			        coalesce(sum(syncs), 0) FROM moves`, &withErr, &ended, &syncs); err != nil {
			t.Fatal(err)
		}
		if withErr == 0 || syncs < 4 {
			t.Errorf("seed %d: the log exercised too little: %d rows with an error, %d ended, %d syncs", seed, withErr, ended, syncs)
		}
	}
}
