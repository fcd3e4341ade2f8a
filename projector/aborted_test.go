package projector_test

import (
	"fmt"
	"testing"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
)

// TestAbortedTransactionsFoldOnce puts aborted transactions between
// committed ones on every partition the events use, as producers that die
// or are fenced mid-append leave them on Apache Kafka: their records take
// offsets, and markers take more. The projector folds each committed
// event once and nothing of the aborted ones, before and after a restart
// in the middle, and a replay equals the views.
func TestAbortedTransactionsFoldOnce(t *testing.T) {
	e := newEnv(t)
	approved := func(i int) events.Envelope {
		r := fmt.Sprintf("r%d", i)
		return events.New(events.RequestApproved{Request: r}, events.WithProducer("test"),
			events.WithReason(events.Reason{Actor: "operator:alice", Why: "testing", RequestID: r}))
	}
	abort := func(from, to int) {
		var recs []kafka.Raw
		for i := from; i < to; i++ {
			v := approved(i)
			b, err := events.Encode(v)
			if err != nil {
				t.Fatal(err)
			}
			for p := int32(0); p < 3; p++ { // every partition of the topic
				recs = append(recs, kafka.Raw{Topic: events.TopicRequests, Partition: p, Key: []byte(v.Key), Value: b})
			}
		}
		if err := kafka.WriteAborted(e.ctx, e.k.Config(), "aborting-producer", recs); err != nil {
			t.Fatal(err)
		}
	}
	e.append(approved(0), approved(1))
	abort(100, 105)
	e.append(approved(2))
	e.run() // folds up to here, then stops: the next run starts past gaps
	abort(200, 203)
	e.append(approved(3), approved(4))
	abort(300, 301)
	e.run()

	var logged, requests, aborted int
	e.get(`SELECT count(*) FROM event_log`, &logged)
	e.get(`SELECT count(*) FROM requests`, &requests)
	e.get(`SELECT count(*) FROM event_log WHERE request_id IN ('r100','r200','r300')`, &aborted)
	check(t, "event_log rows, requests, rows of aborted events", []any{logged, requests, aborted}, []any{5, 5, 0})
	e.replayEqual()
}
