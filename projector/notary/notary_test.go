package notary_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/projector/notary"
	"github.com/drovehq/drove/test/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestNotaryResumesAfterItsLastCheckpoint: a notary stopped and started
// again goes on with the same chains, so the log verifies whole; several
// producers write the same partitions and know nothing of it.
func TestNotaryResumesAfterItsLastCheckpoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	k, kcfg := testenv.Events(t, ctx)
	producers := []*kafka.Producer{k.Producer(t, kcfg, "p1"), k.Producer(t, kcfg, "p2")}
	_, key, _ := ed25519.GenerateKey(nil)
	pub := key.Public().(ed25519.PublicKey)
	n := 0
	appendSome := func(count int) {
		for range count {
			n++
			ev := events.New(events.RequestApproved{Request: fmt.Sprintf("r%d", n%5)}, events.WithProducer("test"),
				events.WithReason(events.Reason{Actor: "operator:alice", Why: "test"}))
			if err := producers[n%2].Append(ctx, events.TopicRequests, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	certify := func() notary.Report {
		t.Helper()
		nctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- notary.Run(nctx, notary.Config{Kafka: kcfg,
				Key: key, Interval: 50 * time.Millisecond, MaxRecords: 7})
		}()
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
			if !rep.OK {
				t.Fatalf("breaks: %v", rep.Breaks)
			}
			if rep.Covered == rep.Records {
				return rep
			}
			select {
			case err := <-done:
				t.Fatalf("notary stopped: %v", err)
			case <-time.After(50 * time.Millisecond): // polling the log under the test's deadline
			}
		}
	}
	appendSome(20)
	first := certify()
	appendSome(15)
	rep := certify()
	if rep.Records != 35 || first.Records != 20 {
		t.Fatalf("certified %d then %d records, want 20 then 35", first.Records, rep.Records)
	}
	cps := 0
	for _, p := range rep.Partitions {
		cps += p.Checkpoints
	}
	if cps < 6 { // at most 7 records a checkpoint, and a cut at each restart
		t.Errorf("%d checkpoints for 35 records", cps)
	}
}

func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "k")
	pub, err := notary.GenerateKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := notary.GenerateKey(path); err == nil {
		t.Error("GenerateKey overwrote a key")
	}
	priv, err := notary.LoadKey(path)
	if err != nil || !priv.Public().(ed25519.PublicKey).Equal(pub) {
		t.Fatalf("LoadKey: %v", err)
	}
	for _, f := range []string{path, path + ".pub"} {
		got, err := notary.LoadPublicKey(f)
		if err != nil || !got.Equal(pub) {
			t.Errorf("LoadPublicKey(%s): %v", f, err)
		}
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := notary.LoadKey(path); !errors.Is(err, notary.ErrKey) {
		t.Errorf("LoadKey of a 0644 key = %v, want refused", err)
	}
}
