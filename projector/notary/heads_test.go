package notary_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/chain"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/projector/notary"
	"github.com/drovehq/drove/test/testenv"
)

// TestHeadsSeeACutTail: on a real broker, a log whose checkpoints were
// cut at their end, or whose records were cut at their end together with
// the checkpoints of what was cut, or whose checkpoints topic was
// deleted, verifies on its own; against the notary's heads file it
// fails, naming the partition and what is missing.
func TestHeadsSeeACutTail(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	k, kcfg := testenv.Events(t, ctx)
	prod := k.Producer(t, kcfg, "p1")
	for i := range 30 {
		ev := events.New(events.RequestApproved{Request: fmt.Sprintf("r%d", i%5)}, events.WithProducer("test"),
			events.WithReason(events.Reason{Actor: "operator:alice", Why: "test"}))
		if err := prod.Append(ctx, events.TopicRequests, ev); err != nil {
			t.Fatal(err)
		}
	}
	_, key, _ := ed25519.GenerateKey(nil)
	pub := key.Public().(ed25519.PublicKey)
	headsFile := filepath.Join(t.TempDir(), "heads.jsonl")
	certifyAll(t, ctx, kcfg, notary.Config{Kafka: kcfg, Key: key, Interval: 50 * time.Millisecond, MaxRecords: 4, Heads: headsFile}, pub)
	heads, err := notary.ReadHeads(headsFile)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := notary.VerifyLog(ctx, kcfg, pub, heads); err != nil || !rep.OK || rep.Heads == 0 {
		t.Fatalf("the untouched log against %d heads: %v, %+v", len(heads), err, rep)
	}

	log, err := notary.ReadRaw(ctx, kcfg, events.Topics()...)
	if err != nil {
		t.Fatal(err)
	}
	cps, err := notary.ReadCheckpoints(ctx, kcfg)
	if err != nil {
		t.Fatal(err)
	}
	// The requests partition with the most checkpoints; what is cut is its
	// last checkpoint, and then also the records that one certified.
	var target notary.Partition
	for p, cs := range cps {
		if p.Topic == events.TopicRequests && len(cs) > len(cps[target]) {
			target = p
		}
	}
	tc := cps[target]
	if len(tc) < 2 {
		t.Fatalf("%v has %d checkpoints, want 2 or more", target, len(tc))
	}
	last, kept := tc[len(tc)-1], tc[len(tc)-2].Records
	lastCheckpoint := func(p notary.Partition, i int, r chain.Record) bool {
		return p == notary.Partition{Topic: events.TopicCheckpoints, Partition: last.Partition} && r.Offset == last.Offset
	}
	for _, c := range []struct {
		name string
		drop func(p notary.Partition, i int, r chain.Record) bool
		want string
	}{
		{"checkpoints cut at the end", lastCheckpoint,
			fmt.Sprintf("drove.checkpoints ends at record %d of this partition; the signed head kept outside the log certifies %d", kept, last.Records)},
		{"log and checkpoints cut at the end", func(p notary.Partition, i int, r chain.Record) bool {
			return lastCheckpoint(p, i, r) || p == target && int64(i) >= kept
		}, fmt.Sprintf("the log ends after %d records; the signed head kept outside the log certifies %d", kept, last.Records)},
	} {
		t.Run(c.name, func(t *testing.T) {
			cut := copyLog(t, ctx, kcfg, log, c.drop)
			if rep, err := notary.VerifyLog(ctx, cut, pub, nil); err != nil || !rep.OK {
				t.Fatalf("without the heads: %v, %v (the cut should pass unseen)", err, rep.Breaks)
			}
			rep, err := notary.VerifyLog(ctx, cut, pub, heads)
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK || len(rep.Breaks) != 1 || rep.Breaks[0].Topic != target.Topic || rep.Breaks[0].Partition != target.Partition ||
				!strings.Contains(rep.Breaks[0].Reason, c.want) {
				t.Fatalf("against the heads: breaks %v, want one in %v: %q", rep.Breaks, target, c.want)
			}
			t.Logf("%s: %s", c.name, rep.Breaks[0])
		})
	}

	// The checkpoints topic deleted: every partition with a head breaks.
	if err := kafka.DeleteTopics(ctx, kcfg, events.TopicCheckpoints); err != nil {
		t.Fatal(err)
	}
	if rep, err := notary.VerifyLog(ctx, kcfg, pub, nil); err != nil || !rep.OK || rep.Covered != 0 {
		t.Fatalf("without the heads, no checkpoints: %v, %+v", err, rep)
	}
	rep, err := notary.VerifyLog(ctx, kcfg, pub, heads)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || len(rep.Breaks) != len(heads) {
		t.Fatalf("no checkpoints, against %d heads: %v", len(heads), rep.Breaks)
	}
	for _, b := range rep.Breaks {
		if !strings.Contains(b.Reason, "drove.checkpoints ends at record 0 of this partition") {
			t.Errorf("break %s", b)
		}
	}
}

// certifyAll runs the notary until it has certified the whole log.
func certifyAll(t *testing.T, ctx context.Context, kcfg kafka.Config, cfg notary.Config, pub ed25519.PublicKey) {
	t.Helper()
	nctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- notary.Run(nctx, cfg) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("notary.Run: %v", err)
		}
	}()
	for {
		rep, err := notary.VerifyLog(ctx, kcfg, pub, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.OK && rep.Covered == rep.Records {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("notary stopped: %v", err)
		case <-time.After(50 * time.Millisecond): // polling the log under the test's deadline
		}
	}
}

// copyLog writes log, as stored, under a namespace of its own on the same
// broker, leaving out the records drop says (i: the record's index in its
// partition).
func copyLog(t *testing.T, ctx context.Context, kcfg kafka.Config, log map[notary.Partition][]chain.Record,
	drop func(p notary.Partition, i int, r chain.Record) bool) kafka.Config {
	t.Helper()
	cfg := kcfg
	cfg.Namespace = kcfg.Namespace + strings.ReplaceAll(t.Name()[strings.LastIndex(t.Name(), "/")+1:], "_", "-") + "-"
	if err := kafka.EnsureTopics(ctx, cfg, 3, events.Topics()...); err != nil {
		t.Fatal(err)
	}
	var out []kafka.Raw
	for p, recs := range log {
		for i, r := range recs {
			if drop(p, i, r) {
				continue
			}
			kr := kafka.Raw{Topic: p.Topic, Partition: p.Partition, Key: r.Key, Value: r.Value, Time: time.UnixMilli(r.TimestampMill)}
			for _, h := range r.Headers {
				kr.Headers = append(kr.Headers, kafka.Header{Key: string(h.Key), Value: h.Value})
			}
			out = append(out, kr)
		}
	}
	if err := kafka.WriteRecords(ctx, cfg, out); err != nil {
		t.Fatal(err)
	}
	return cfg
}
