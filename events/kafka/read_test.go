package kafka

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/drovehq/drove/events"
)

// opcodeEvent is a valid drove.opcodes event keyed by node.
func opcodeEvent(node string, i int) events.Envelope {
	return events.New(events.OpcodeStarted{Request: "r1", Job: i, Index: 0, Node: node},
		events.WithProducer("test"),
		events.WithReason(events.Reason{Actor: "test", Why: "testing", RequestID: "r1"}))
}

// readUntil reads batches until n data records came or the reader ends.
func readUntil(t *testing.T, ctx context.Context, r *Reader, n int) ([]Record, Batch) {
	t.Helper()
	var out []Record
	var last Batch
	for len(out) < n {
		b, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Next after %d records: %v", len(out), err)
		}
		recs, err := b.Decode()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
		last = b
	}
	return out, last
}

func TestReaderReadsOnlyTheKeysPartitionFromAPosition(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 4, events.TopicOpcodes)
	p := newProducer(t, cfg)
	nodes := []string{"n1", "n2", "n3", "n4", "n5", "n6"}
	for i := range 5 {
		for _, n := range nodes {
			if err := p.Append(ctx, events.TopicOpcodes, opcodeEvent(n, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	mine := PartitionOf(events.TopicOpcodes, "n1", 4)
	r, err := NewReader(ctx, cfg, ReadOptions{Topics: []string{events.TopicOpcodes},
		Keys: map[string][]string{events.TopicOpcodes: {"n1"}}, MaxRecords: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Partitions()[events.TopicOpcodes]; len(got) != 1 || got[0] != mine {
		t.Fatalf("Partitions = %v, want [%d]", got, mine)
	}
	recs, _ := readUntil(t, ctx, r, 1<<30)
	n1 := 0
	for _, rec := range recs {
		if rec.Partition != mine {
			t.Fatalf("record %s outside partition %d", rec, mine)
		}
		if rec.Event.Key == "n1" {
			n1++
		}
	}
	if n1 != 5 {
		t.Fatalf("read %d events of n1, want 5 (the producer put them in partition %d)", n1, mine)
	}
	for _, rec := range recs {
		if PartitionOf(events.TopicOpcodes, rec.Event.Key, 4) != mine {
			t.Fatalf("%s keyed %s: PartitionOf disagrees with the producer", rec, rec.Event.Key)
		}
	}
	// Fetched counts what came over the wire: this partition only.
	got := r.Fetched()[events.TopicOpcodes]
	if want := int64(2 * len(recs)); got.Records != want || got.Bytes == 0 {
		t.Fatalf("fetched %+v, want %d records (each event and its commit marker)", got, want)
	}

	// A second reader from the first's position reads only what is new.
	from := r.Position()
	if err := p.Append(ctx, events.TopicOpcodes, opcodeEvent("n1", 99)); err != nil {
		t.Fatal(err)
	}
	r2, err := NewReader(ctx, cfg, ReadOptions{Topics: []string{events.TopicOpcodes},
		Partitions: map[string][]int32{events.TopicOpcodes: {mine}}, From: from})
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	recs, _ = readUntil(t, ctx, r2, 1<<30)
	if len(recs) != 1 || recs[0].Event.Key != "n1" {
		t.Fatalf("resumed read = %v, want the one new event", ids(recs))
	}
}

func TestReaderFollowsAfterCatchingUp(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 2, topic)
	p := newProducer(t, cfg)
	old := []events.Envelope{event("a"), event("b"), event("c")}
	if err := p.Append(ctx, topic, old...); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(ctx, cfg, ReadOptions{Topics: []string{topic}, Follow: true, MaxWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []Record
	for {
		b, err := r.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		recs, _ := b.Decode()
		got = append(got, recs...)
		if b.CaughtUp {
			break
		}
	}
	if len(got) != 3 {
		t.Fatalf("caught up after %d records, want 3", len(got))
	}
	// Nothing new: Next returns an empty batch after MaxWait.
	if b, err := r.Next(ctx); err != nil || len(b.Records) != 0 || !b.CaughtUp {
		t.Fatalf("idle Next = %d records, caught up %v, %v", len(b.Records), b.CaughtUp, err)
	}
	if err := p.Append(ctx, topic, event("d")); err != nil {
		t.Fatal(err)
	}
	recs, _ := readUntil(t, ctx, r, 1)
	if len(recs) != 1 || recs[0].Event.Key != "d" {
		t.Fatalf("followed %v, want d", recs)
	}
	ends, pos := r.Ends(), r.Position()
	for tp, end := range ends {
		if pos[tp] > end {
			t.Fatalf("%s: position %d past end %d", tp, pos[tp], end)
		}
	}
}

func TestReaderStopsAtTheEndItOpenedWith(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 1, topic)
	p := newProducer(t, cfg)
	if err := p.Append(ctx, topic, event("a")); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(ctx, cfg, ReadOptions{Topics: []string{topic}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := p.Append(ctx, topic, event("later")); err != nil {
		t.Fatal(err)
	}
	recs, last := readUntil(t, ctx, r, 1<<30)
	if len(recs) != 1 || !last.CaughtUp {
		t.Fatalf("read %v (caught up %v), want a only", ids(recs), last.CaughtUp)
	}
	if _, err := r.Next(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("Next after the end = %v, want io.EOF", err)
	}
}

func TestCheckpointKeepsPositionsWithoutJoiningTheGroup(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 2, topic)
	c, err := OpenCheckpoint(cfg, "drove-executor-n1")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got, err := c.Load(ctx, topic); err != nil || len(got) != 0 {
		t.Fatalf("fresh Load = %v, %v; want nothing", got, err)
	}
	want := Positions{{topic, 1}: 7}
	if err := c.Save(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(ctx, want); err != nil {
		t.Fatalf("Save again: %v", err)
	}
	got, err := c.Load(ctx, topic)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Load = %v, %v; want %v", got, err, want)
	}
}

func TestFenceStopsTheOlderProducer(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 1, topic)
	old := newProducer(t, cfg)
	if err := old.Append(ctx, topic, event("a")); err != nil {
		t.Fatal(err)
	}
	newer := newProducer(t, cfg)
	if err := newer.Fence(ctx); err != nil {
		t.Fatal(err)
	}
	if err := old.Append(ctx, topic, event("b")); !errors.Is(err, ErrFenced) {
		t.Fatalf("fenced producer's Append = %v, want ErrFenced", err)
	}
}

func TestElectionHasOneLeaderAndHandsOver(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 1, topic)
	var leaders atomic.Int32
	elected := make(chan string, 4)
	join := func(name string) *Elector {
		el, err := JoinElection(cfg, Election{Group: "elect", Topic: topic, Timeout: 6 * time.Second,
			Elected: func() {
				if leaders.Add(1) != 1 {
					t.Errorf("%s elected while another leads", name)
				}
				elected <- name
			},
			Deposed: func(string) { leaders.Add(-1) }})
		if err != nil {
			t.Fatal(err)
		}
		return el
	}
	a := join("a")
	first := wait(t, ctx, elected, "a leader")
	b := join("b")
	if first != "a" {
		t.Fatalf("first leader %s, want a", first)
	}
	a.Leave()
	if got := wait(t, ctx, elected, "the next leader"); got != "b" {
		t.Fatalf("next leader %s, want b", got)
	}
	b.Leave()
	if n := leaders.Load(); n != 0 {
		t.Fatalf("%d leaders after everyone left", n)
	}
}

func TestReaderStopsWhereToSays(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 1, topic)
	p := newProducer(t, cfg)
	for _, k := range []string{"a", "b", "c"} {
		if err := p.Append(ctx, topic, event(k)); err != nil {
			t.Fatal(err)
		}
	}
	// Each append is an event and its commit marker: b's marker ends at 4.
	r, err := NewReader(ctx, cfg, ReadOptions{Topics: []string{topic}, To: Positions{{topic, 0}: 4}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	recs, last := readUntil(t, ctx, r, 1<<30)
	if len(recs) != 2 || recs[1].Event.Key != "b" || last.Next[TopicPartition{topic, 0}] != 4 {
		t.Fatalf("read %v up to %v, want a and b, up to 4", ids(recs), last.Next)
	}
}

// A following reader with Refresh starts reading partitions added to its
// topics after it opened, from their start, and keeps its Ends current.
func TestReaderPicksUpNewPartitions(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 1, topic)
	r, err := NewReader(ctx, cfg, ReadOptions{Topics: []string{topic}, Follow: true,
		MaxWait: 50 * time.Millisecond, Refresh: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cl, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreatePartitions(ctx, 2, cfg.wire(topic)); err != nil {
		t.Fatal(err)
	}
	// The producer is made once the broker lists the new partitions: one
	// whose metadata still said one partition put all eight in the first
	// (make test, once), and the new ones went unread.
	tick := time.NewTicker(20 * time.Millisecond) // polling the broker, within the test's deadline
	defer tick.Stop()
	for all, err := Ends(ctx, cfg, topic); len(all) < 3; all, err = Ends(ctx, cfg, topic) {
		if err != nil {
			t.Fatalf("the new partitions not listed: %v (%v)", all, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the new partitions not listed: %v (%v)", all, ctx.Err())
		case <-tick.C:
		}
	}
	p := newProducer(t, cfg)
	var sent []events.Envelope
	for i := range 8 { // keys k0-k7 land in all three partitions
		e := event(fmt.Sprintf("k%d", i))
		sent = append(sent, e)
		if err := p.Append(ctx, topic, e); err != nil {
			t.Fatal(err)
		}
	}
	recs, _ := readUntil(t, ctx, r, len(sent))
	if len(recs) != len(sent) {
		t.Fatalf("read %d of %d events", len(recs), len(sent))
	}
	if !slices.ContainsFunc(recs, func(rec Record) bool { return rec.Partition > 0 }) {
		t.Fatalf("no event read from the new partitions: %v", recs)
	}
	// Ends follows the refresh, which may come after the last event read.
	for len(r.Ends()) < 3 {
		if _, err := r.Next(ctx); err != nil {
			t.Fatalf("Ends lists %v after %v (want 3 partitions)", r.Ends(), err)
		}
	}
}

// TestWriteRecordsCopiesWhatReaderReads: records written as given come
// back from a Reader as given, headers and timestamps included, each in
// the partition it named and in order there; one larger than a megabyte
// (franz-go's default batch, which Apache Kafka's default record bound
// matches) too, as the log may hold one up to MaxRecordBytes.
func TestWriteRecordsCopiesWhatReaderReads(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	cfg := newCluster(t, 3, events.TopicOpcodes)
	at := time.UnixMilli(1_700_000_000_123)
	var want []Raw
	for i := range 6 {
		want = append(want, Raw{Topic: events.TopicOpcodes, Partition: int32(2 - i%2), Offset: int64(i / 2),
			Key: []byte(fmt.Sprint("k", i)), Value: []byte(fmt.Sprint("v", i)), Time: at.Add(time.Duration(i) * time.Millisecond),
			Headers: []Header{{Key: "h", Value: []byte(fmt.Sprint(i))}, {Key: "empty"}}})
	}
	want[5].Value = bytes.Repeat([]byte("x"), 3<<19)
	if err := WriteRecords(ctx, cfg, want); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(ctx, cfg, ReadOptions{Topics: []string{events.TopicOpcodes}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := map[TopicPartition][]Raw{}
	for {
		b, err := r.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range b.Records {
			tp := TopicPartition{rec.Topic, rec.Partition}
			got[tp] = append(got[tp], rec)
		}
	}
	if n := len(got[TopicPartition{events.TopicOpcodes, 0}]); n != 0 {
		t.Fatalf("partition 0 has %d records, want none", n)
	}
	for i, w := range want {
		recs := got[TopicPartition{w.Topic, w.Partition}]
		if int(w.Offset) >= len(recs) {
			t.Fatalf("record %d (%s) not read back; read %v", i, w, got)
		}
		g := recs[w.Offset]
		if g.Offset != w.Offset || string(g.Key) != string(w.Key) || string(g.Value) != string(w.Value) ||
			!g.Time.Equal(w.Time) || fmt.Sprint(g.Headers) != fmt.Sprint(w.Headers) {
			t.Errorf("record %d: read %+v, wrote %+v", i, g, w)
		}
	}
}
