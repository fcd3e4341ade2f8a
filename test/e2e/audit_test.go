package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/gateway/client"
	"github.com/drovehq/drove/gateway/wire"
	"github.com/drovehq/drove/projector/notary"
	"github.com/drovehq/drove/test/testenv"
)

// The auditor's questions (issue 15), through the drove binary against the
// whole system: after an evacuation, a per-instance migration and its
// rollback, the history of an instance, a node, a request and a migration
// match the log, with who asked and why, and owners read only their own;
// the views at a moment in the middle of the evacuation are what the live
// views showed then; and the notary's checkpoints catch a copy of the log
// with a record altered, removed or two swapped, at the right place.

// snapshot is the live instances view at a moment, with where the
// projector was in the log when it was read.
type snapshot struct {
	at      time.Time // after the read (checkPointInTime moves it back to the moment the view was exact)
	where   map[string]string
	offsets map[string]map[int32]int64
}

// sampleLive reads the live view and its offsets in one snapshot.
func sampleLive(ctx context.Context, e *env) (snapshot, error) {
	s := snapshot{where: map[string]string{}, offsets: map[string]map[int32]int64{}}
	tx, err := e.sys.Pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return s, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	rows, err := tx.Query(ctx, `SELECT name, primary_node || '+' || secondary_node FROM drove.instances`)
	if err != nil {
		return s, err
	}
	var name, place string
	if _, err := pgx.ForEachRow(rows, []any{&name, &place}, func() error { s.where[name] = place; return nil }); err != nil {
		return s, err
	}
	rows, err = tx.Query(ctx, `SELECT topic, partition, next_offset FROM drove.projector_offsets`)
	if err != nil {
		return s, err
	}
	var topic string
	var p int32
	var off int64
	if _, err := pgx.ForEachRow(rows, []any{&topic, &p, &off}, func() error {
		if s.offsets[topic] == nil {
			s.offsets[topic] = map[int32]int64{}
		}
		s.offsets[topic][p] = off
		return nil
	}); err != nil {
		return s, err
	}
	err = tx.Commit(ctx)
	s.at = time.Now()
	return s, err
}

// drove runs the binary with env set and returns its stdout and exit code.
func drove(t *testing.T, bin string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if code := cmd.ProcessState.ExitCode(); code == 1 || code == 2 {
		t.Logf("drove %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	}
	return string(out), cmd.ProcessState.ExitCode()
}

// historyOf runs drove history KIND ID --json and decodes its lines.
func historyOf(t *testing.T, bin string, env []string, kind, id string) []wire.HistoryEntry {
	t.Helper()
	out, code := drove(t, bin, env, "history", kind, id, "--json", "--page", "7")
	if code != 0 {
		t.Fatalf("drove history %s %s exited %d", kind, id, code)
	}
	var es []wire.HistoryEntry
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var h wire.HistoryEntry
		if err := json.Unmarshal(sc.Bytes(), &h); err != nil {
			t.Fatalf("history line %q: %v", sc.Text(), err)
		}
		es = append(es, h)
	}
	return es
}

// placementsInLog are the placements of instance in the log, in order:
// where it was declared, then where each InstancePlaced put it.
func placementsInLog(t *testing.T, kcfg kafka.Config, instance string) []string {
	t.Helper()
	recs, err := kafka.ReadAll(context.Background(), kcfg, events.TopicInventory)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range recs {
		p, err := r.Event.DecodePayload()
		if err != nil {
			t.Fatal(err)
		}
		switch e := p.(type) {
		case events.InstanceDeclared:
			if e.Name == instance {
				out = append(out, e.PrimaryNode+"+"+e.SecondaryNode)
			}
		case events.InstancePlaced:
			if e.Instance == instance {
				out = append(out, e.PrimaryNode+"+"+e.SecondaryNode)
			}
		}
	}
	return out
}

func placementsInHistory(hs []wire.HistoryEntry) []string {
	var out []string
	for _, h := range hs {
		if (h.Type == events.TypeInstanceDeclared || h.Type == events.TypeInstancePlaced) && h.After != nil {
			out = append(out, h.After.Primary+"+"+h.After.Secondary)
		}
	}
	return out
}

func TestAuditTrail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keyFile, otherKey := filepath.Join(dir, "notary.key"), filepath.Join(dir, "other.key")
	for _, f := range []string{keyFile, otherKey} {
		if _, err := notary.GenerateKey(f); err != nil {
			t.Fatal(err)
		}
	}
	key, err := notary.LoadKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	e := startWith(t, func(c *allinone.Config) {
		c.Seed, c.GatewayTokens = ownedDemo, permTokens
		c.NotaryKey, c.NotaryInterval = key, 200*time.Millisecond
	}, tokOperator)
	ctx := context.Background()
	bin := testenv.Drove(t)
	opsEnv := []string{"DROVE_GATEWAY=" + e.api.Base, "DROVE_TOKEN=" + tokOperator}

	// An evacuation, the live view sampled while it runs.
	const evacuated = "node-g2-003"
	before := e.instances(evacuated)
	evac, err := e.api.Evacuate(ctx, wire.Evacuation{Nodes: []string{evacuated}, Mode: "all", Reason: "e2e: audit, disk swap"})
	if err != nil {
		t.Fatal(err)
	}
	var samples []snapshot
	sctx, stopSampling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for sctx.Err() == nil {
			if s, err := sampleLive(sctx, e); err == nil {
				samples = append(samples, s)
			}
		}
	})
	e.finish(evac.Request, 3*time.Minute)
	stopSampling()
	wg.Wait()

	// A per-instance migration of an owner's instance, switched, then
	// rolled back.
	mig := e.movableOf(acctA, 1)[0]
	id := e.act(mig.Name, "begin", client.MigrateOptions{Reason: "e2e: audit, rebalance"})
	e.awaitState(id, time.Minute, "paused")
	e.act(mig.Name, "sync", client.MigrateOptions{})
	e.awaitRecord(id, time.Minute, "paused after one sync", func(m wire.InstanceMigration) bool { return m.State == "paused" && m.Syncs == 1 })
	e.act(mig.Name, "switch", client.MigrateOptions{})
	m := e.awaitState(id, time.Minute, "successful")
	e.awaitPrimary(mig.Name, m.Target, time.Minute)
	e.act(mig.Name, "rollback", client.MigrateOptions{})
	m = e.awaitState(id, time.Minute, "aborted")
	e.awaitPrimary(mig.Name, m.Source, time.Minute)

	checkHistories(t, e, bin, opsEnv, evac.Request, evacuated, before, mig.Name, id)
	checkAuditCommand(t, e, bin, opsEnv, evacuated)
	checkPointInTime(t, e, bin, samples)
	checkTamperEvidence(t, e, bin, keyFile, otherKey)
}
