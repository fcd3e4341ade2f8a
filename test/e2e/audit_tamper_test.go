package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/chain"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/projector/notary"
	"github.com/drovehq/drove/test/testenv"
)

// checkTamperEvidence: once the notary has certified the whole log,
// drove verify-log passes it, refuses its checkpoints under another key,
// and catches a copy of the log (on a second broker) with one record
// altered, one removed, or two swapped, at the right place.
func checkTamperEvidence(t *testing.T, e *env, bin, keyFile, otherKey string) {
	ctx := context.Background()
	pub, err := notary.LoadPublicKey(keyFile + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	var rep notary.Report
	e.waitFor("the notary to certify the whole log", 2*time.Minute, func() bool {
		rep, err = notary.VerifyLog(ctx, e.kcfg, pub, nil)
		return err == nil && rep.OK && rep.Covered == rep.Records
	})
	t.Logf("the notary certified %d records; verified in %s", rep.Records, rep.Duration)
	brokers := testenv.KafkaEnv(e.kcfg)
	if out, code := drove(t, bin, brokers, "verify-log", "--key", keyFile+".pub"); code != 0 {
		t.Fatalf("verify-log on the untouched log: exit %d\n%s", code, out)
	} else {
		t.Logf("drove verify-log:\n%s", out)
	}
	out, code := drove(t, bin, brokers, "verify-log", "--key", otherKey+".pub", "--json")
	if got := verifyLogReport(t, out); code != verifyExitViolations || len(got.Breaks) == 0 ||
		!got.Breaks[0].Checkpoint || !strings.Contains(got.Breaks[0].Reason, "signed with key") {
		t.Fatalf("verify-log with another key: exit %d, %+v", code, got.Breaks)
	}

	log, err := notary.ReadRaw(ctx, e.kcfg, events.Topics()...)
	if err != nil {
		t.Fatal(err)
	}
	// The inventory partition with the most records; the record edited
	// is in its middle, certified.
	var target notary.Partition
	for p, recs := range log {
		if p.Topic == events.TopicInventory && len(recs) > len(log[target]) {
			target = p
		}
	}
	i := len(log[target]) / 2
	for _, c := range []struct {
		name string
		edit func([]chain.Record) []chain.Record
	}{
		{"untouched", func(r []chain.Record) []chain.Record { return r }},
		{"altered", func(r []chain.Record) []chain.Record {
			v := slices.Clone(r[i].Value)
			r[i].Value = append(v[:len(v)-1:len(v)-1], ' ', v[len(v)-1])
			return r
		}},
		{"removed", func(r []chain.Record) []chain.Record { return slices.Delete(r, i, i+1) }},
		{"swapped", func(r []chain.Record) []chain.Record { r[i], r[i+1] = r[i+1], r[i]; return r }},
	} {
		cp := copyLog(t, log, target, c.edit)
		out, code := drove(t, bin, testenv.KafkaEnv(cp.Config()), "verify-log", "--key", keyFile, "--json")
		got := verifyLogReport(t, out)
		if c.name == "untouched" {
			// The system runs on (heartbeats, the notary's checkpoints),
			// so the copy, read later, may hold more certified records.
			if code != 0 || !got.OK || got.Covered < rep.Covered {
				t.Errorf("verify-log on an untouched copy: exit %d, %d records covered (at least %d expected), %+v",
					code, got.Covered, rep.Covered, got.Breaks)
			}
			continue
		}
		// The copy has no commit markers: a record's offset is its index.
		want := chain.Break{Topic: target.Topic, Partition: target.Partition, Offset: int64(i), Index: int64(i)}
		if code != verifyExitViolations || len(got.Breaks) != 1 || got.Breaks[0].Topic != want.Topic ||
			got.Breaks[0].Partition != want.Partition || got.Breaks[0].Offset != want.Offset {
			t.Errorf("verify-log on a copy with a record %s at %s/%d@%d: exit %d, breaks %+v", c.name,
				want.Topic, want.Partition, want.Offset, code, got.Breaks)
		} else {
			t.Logf("a record %s: %s", c.name, got.Breaks[0])
		}
	}
}

func verifyLogReport(t *testing.T, out string) notary.Report {
	t.Helper()
	var r notary.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("verify-log --json: %v\n%s", err, out)
	}
	return r
}

// copyLog writes every record of log, as stored, into a broker of its own,
// each partition's in order, target's through edit.
func copyLog(t *testing.T, log map[notary.Partition][]chain.Record, target notary.Partition, edit func([]chain.Record) []chain.Record) *testenv.KafkaCluster {
	t.Helper()
	ctx := context.Background()
	k := testenv.Kafka(t)
	if err := kafka.EnsureTopics(ctx, k.Config(), 3, events.Topics()...); err != nil {
		t.Fatal(err)
	}
	var copied []kafka.Raw
	for p, recs := range log {
		recs = slices.Clone(recs)
		if p == target {
			recs = edit(recs)
		}
		for _, r := range recs {
			kr := kafka.Raw{Topic: p.Topic, Partition: p.Partition, Key: r.Key, Value: r.Value,
				Time: time.UnixMilli(r.TimestampMill)}
			for _, h := range r.Headers {
				kr.Headers = append(kr.Headers, kafka.Header{Key: string(h.Key), Value: h.Value})
			}
			copied = append(copied, kr)
		}
	}
	if err := kafka.WriteRecords(ctx, k.Config(), copied); err != nil {
		t.Fatalf("copy the log: %v", err)
	}
	return k
}
