package service

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/planner"
)

// snapCluster is testCluster with three ZFS-local instances on n4, which
// per-instance migrations can move.
func snapCluster() *planner.Cluster {
	c := testCluster(200)
	for _, name := range []string{"z1", "z2", "z3"} {
		c.Instances = append(c.Instances, planner.Instance{Name: name, Memory: 1024, DiskSpace: 1024,
			Disks: []planner.Disk{{Size: 1024}}, VCPUs: 1, SpindleUse: 1, NICs: 1, Owner: "acct-1",
			Storage: planner.ZFSLocal, State: planner.Up, Primary: 3, Secondary: planner.NoNode})
		c.Nodes[3].FreeMemory -= 1024
		c.Nodes[3].FreeDisk -= 1024
	}
	return c
}

// frozen is the clock of every service of these tests: the migration
// fold stamps phases with it, and a state rebuilt twice must be stamped
// alike to compare equal.
func frozen() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

// migrate appends a command as the gateway would.
func (h *harness) migrate(mig, instance string, a events.MigrationAction) {
	h.t.Helper()
	h.appendEvent(events.MigrationActionRequested{Migration: mig, Instance: instance, Action: a,
		Account: "alice", Role: events.RoleOperator}, "operator:alice", string(a)+" "+instance, mig)
}

// endPhase plays n4's executor for one phase: it waits for the dispatch
// of phase to mig and appends its successful end.
func (h *harness) endPhase(mig, phase string) {
	h.t.Helper()
	var d events.MigrationPhaseDispatched
	h.waitFor(mig+" "+phase+" dispatched", func() bool {
		for _, e := range h.read(events.TopicOpcodes) {
			if e.Type == events.TypeMigrationPhaseDispatched {
				if p := must[events.MigrationPhaseDispatched](h.t, e); p.Migration == mig && p.Phase == phase {
					d = p
					return true
				}
			}
		}
		return false
	})
	h.appendEvent(events.MigrationPhaseEnded{Migration: mig, Instance: d.Instance, Node: d.Node, Seq: d.Seq,
		Phase: d.Phase, Status: events.JobSuccess}, "executor:n4", phase+" done", mig)
}

// record waits for a record of mig in state st.
func (h *harness) record(mig string, st events.MigrationState) {
	h.t.Helper()
	h.waitFor(mig+" to be "+string(st), func() bool {
		for _, e := range h.read(events.TopicMigrations) {
			if e.Type == events.TypeMigrationStateChanged {
				if r := must[events.MigrationStateChanged](h.t, e); r.Migration == mig && r.State == st {
					return true
				}
			}
		}
		return false
	})
}

// rebuild folds the log as a start of the service would, without deciding:
// from the snapshot in dir (none if dir is empty) and the log after it.
func (h *harness) rebuild(dir string) (*state, Restart) {
	h.t.Helper()
	kc := h.kc
	kc.TransactionalID = ""
	svc, err := New(Config{Kafka: kc, SnapshotDir: dir, Clock: frozen, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		h.t.Fatal(err)
	}
	l := &loop{svc: svc}
	rd, err := l.replay(h.ctx)
	if err != nil {
		h.t.Fatalf("replay: %v", err)
	}
	rd.Close()
	return l.st, Restart{Snapshot: l.restart.Snapshot, Ignored: l.restart.Ignored, Events: l.folded}
}

// image is a state as plain JSON values, for comparing: the folds as
// their JSON, the inventory as its exported maps and order (where a diff
// can point) and the checksum of its whole encoding (groups and first
// positions included).
func image(t *testing.T, st *state) map[string]any {
	t.Helper()
	var inv bytes.Buffer
	w := bufio.NewWriter(&inv)
	if err := st.inv.Encode(w); err != nil || w.Flush() != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"jobs": st.reqs, "migrations": st.migs, "nodes": st.nodes,
		"inventory": map[string]any{"nodes": st.inv.Nodes, "instances": st.inv.Instances,
			"instance_order": st.inv.InstanceOrder, "encoded": fmt.Sprintf("%x", sha256.Sum256(inv.Bytes()))}})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// diff names the first place a and b differ ("" if none).
func diff(path string, a, b any) string {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return path
		}
		var keys []string
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, dup := av[k]; !dup {
				keys = append(keys, k)
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			if d := diff(path+"."+k, av[k], bv[k]); d != "" {
				return d
			}
		}
		return ""
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return fmt.Sprintf("%s (length %d vs %v)", path, len(av), b)
		}
		for i := range av {
			if d := diff(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i]); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(a, b) {
		return fmt.Sprintf("%s: %v vs %v", path, a, b)
	}
	return ""
}

// The log stays the truth: after a workload of requests and migrations,
// some closed and some under way, the state rebuilt from offset zero and
// the state restored from the service's snapshot plus the log after it are
// equal, and the service restarted from the snapshot finishes the work.
func TestSnapshotPlusTailEqualsFullReplay(t *testing.T) {
	t.Parallel()
	h := newHarnessWith(t, snapCluster())
	x := h.executor(false, nil)
	dir := t.TempDir()
	snapshotting := func(c *Config) {
		c.SnapshotDir, c.SnapshotEvery, c.Clock, c.Tick = dir, 1, frozen, 20*time.Millisecond
	}
	svc := h.start(snapshotting)

	runSnapshotWorkload(h)

	// r3 runs with its opcodes held.
	x.mu.Lock()
	x.hold = true
	x.mu.Unlock()
	evacuate(h, "r3", false, "n2")
	h.waitFor("r3's opcodes to be held", func() bool { return x.heldCount() > 0 })
	h.waitFor("a snapshot", func() bool {
		_, err := os.Stat(filepath.Join(dir, snapshotFile))
		return err == nil
	})
	svc.cancel()
	if err := <-svc.done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	svc.done <- nil // for the cleanup

	// The tail: what happened while no planner ran.
	x.release()
	h.migrate("m5", "z3", events.ActionBegin)
	evacuate(h, "r4", false, "n4")
	// The two rebuilds below must read the same log: let the executor end
	// what it read after the release (it ends the held ones at once).
	waitEveryOpcodeEnded(t, h)

	full, fr := h.rebuild("")
	snap, sr := h.rebuild(dir)
	if fr.Snapshot || !sr.Snapshot || sr.Ignored != "" {
		t.Fatalf("full replay %+v, from the snapshot %+v", fr, sr)
	}
	if sr.Events >= fr.Events {
		t.Errorf("from the snapshot read %d events, the full replay %d: want fewer", sr.Events, fr.Events)
	}
	if d := diff("state", image(t, full), image(t, snap)); d != "" {
		t.Fatalf("snapshot + tail differs from the full replay at %s", d)
	}
	if reqs, active := full.reqs.Counts(); reqs != 2 || active != 2 {
		t.Errorf("the state holds %d requests, %d active; want r3 and r4 only", reqs, active)
	}
	if got := full.migs.Sorted(); !slices.Equal(got, []string{"m1", "m5"}) {
		t.Errorf("the state holds migrations %v; want m1 and m5 only (the others ended)", got)
	}

	checkSpoiledSnapshotsIgnored(t, h, dir, full, fr)

	// A restart from the snapshot resumes: r3 finishes, r4 and m5 are
	// decided.
	again := h.start(snapshotting)
	if r := again.svc.Restart(); !r.Snapshot || r.Events >= fr.Events {
		t.Errorf("restart %+v; want it from the snapshot", r)
	}
	if e := h.closed("r3"); e.Type != events.TypeRequestFinished {
		t.Errorf("r3 closed with %s", e.Type)
	}
	h.closed("r4")
	h.endPhase("m5", events.PhaseBegin)
	h.record("m5", events.MigrationPaused)
}

// runSnapshotWorkload closes and opens requests and migrations: r1
// finishes, r2 is rejected; m1 is paused after its begin, m2 aborted, m3
// and m4 refused.
func runSnapshotWorkload(h *harness) {
	// r1 finishes, r2 is rejected, r3 runs with its opcodes held.
	evacuate(h, "r1", false, "n1")
	h.closed("r1")
	evacuate(h, "r2", false, "n9")
	h.closed("r2")
	// m1 is paused after its begin, m2 aborted, m3 and m4 refused.
	h.migrate("m1", "z1", events.ActionBegin)
	h.endPhase("m1", events.PhaseBegin)
	h.record("m1", events.MigrationPaused)
	h.migrate("m2", "z2", events.ActionBegin)
	h.endPhase("m2", events.PhaseBegin)
	h.record("m2", events.MigrationPaused)
	h.migrate("m2", "z2", events.ActionAbort)
	h.endPhase("m2", "abort")
	h.record("m2", events.MigrationAborted)
	h.migrate("m3", "z1", events.ActionBegin)
	h.migrate("m4", "ghost", events.ActionBegin)
	h.record("m4", events.MigrationFailed)
	h.record("m3", events.MigrationFailed)
}

// waitEveryOpcodeEnded waits until every opcode dispatched has ended.
func waitEveryOpcodeEnded(t *testing.T, h *harness) {
	endedTopic, _ := events.TopicOf(events.TypeOpcodeEnded)
	h.waitFor("every opcode dispatched to have ended", func() bool {
		ended := map[opKey]bool{}
		for _, e := range h.read(endedTopic) {
			if e.Type == events.TypeOpcodeEnded {
				o := must[events.OpcodeEnded](t, e)
				ended[opKey{o.Request, o.Job, o.Index}] = true
			}
		}
		for k := range dispatchCounts(t, h.read(events.TopicOpcodes)) {
			if !ended[k] {
				return false
			}
		}
		return true
	})
}

// checkSpoiledSnapshotsIgnored spoils the snapshot in dir each way and
// checks each is ignored for a full replay equal to full, read in fr.
func checkSpoiledSnapshotsIgnored(t *testing.T, h *harness, dir string, full *state, fr Restart) {
	// A snapshot that is unreadable, damaged, of another format or log, or
	// at positions the log does not have, is ignored: the state comes from
	// the whole log, and the reason is given.
	for name, c := range map[string]struct {
		spoil func([]byte) []byte
		why   string
	}{
		"unreadable": {func([]byte) []byte { return []byte("not a snapshot, no") }, "unreadable"},
		"truncated":  {func(b []byte) []byte { return b[:len(b)/2] }, "unreadable"},
		"damaged": {func(b []byte) []byte {
			// One owner renamed: a file that still decodes, but not the one written.
			b = slices.Clone(b)
			i := bytes.Index(b[len(magic):], []byte("acct-1")) + len(magic)
			b[i+len("acct-")] = '2'
			return b
		}, "damaged: checksum"},
		"another format":   {reheader(t, func(h *header) { h.Version = 2 }), "format 2"},
		"another log":      {reheader(t, func(h *header) { h.TopicIDs[events.TopicJobs] = "elsewhere" }), "another log"},
		"ahead of the log": {reheader(t, func(h *header) { h.Positions[0].Offset += 1000 }), "before the snapshot's position"},
	} {
		bad := t.TempDir()
		if err := os.WriteFile(filepath.Join(bad, snapshotFile), c.spoil(readSnapshot(t, dir)), 0o644); err != nil {
			t.Fatal(err)
		}
		st, r := h.rebuild(bad)
		if r.Snapshot || !strings.Contains(r.Ignored, c.why) || r.Events != fr.Events {
			t.Errorf("%s snapshot: %+v; want it ignored (%q) for a full replay", name, r, c.why)
		}
		if d := diff("state", image(t, full), image(t, st)); d != "" {
			t.Errorf("%s snapshot: the state differs at %s", name, d)
		}
	}
}

// readSnapshot returns the snapshot file's bytes.
func readSnapshot(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, snapshotFile))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reheader returns a spoiler that changes a snapshot's header and writes
// the checksum anew: a whole snapshot, only not of this build or this log.
func reheader(t *testing.T, change func(*header)) func([]byte) []byte {
	return func(b []byte) []byte {
		t.Helper()
		h, rest := splitHeader(t, b)
		change(&h)
		hb, err := json.Marshal(h)
		if err != nil {
			t.Fatal(err)
		}
		out := binary.AppendUvarint([]byte(magic), uint64(len(hb)))
		out = append(append(out, hb...), rest[:len(rest)-trailerLen]...)
		return fmt.Appendf(out, "crc32c %08x\n", crc32.Checksum(out, castagnoli))
	}
}

// splitHeader returns a snapshot file's header and the bytes after it.
func splitHeader(t *testing.T, b []byte) (header, []byte) {
	t.Helper()
	after := b[len(magic):]
	n, k := binary.Uvarint(after)
	if k <= 0 {
		t.Fatal("no header length")
	}
	var h header
	if err := json.Unmarshal(after[k:k+int(n)], &h); err != nil {
		t.Fatal(err)
	}
	return h, after[k+int(n):]
}

// A service that stops takes a snapshot at its last pass, however few
// events it folded since the one before: the next start reads only what
// that pass appended, read back, and nothing it had folded.
func TestSnapshotTakenAtShutdown(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.executor(false, nil)
	dir := t.TempDir()
	svc := h.start(func(c *Config) {
		c.SnapshotDir, c.SnapshotEvery, c.SnapshotInterval, c.Tick = dir, 1<<30, time.Hour, 20*time.Millisecond
	})
	// The first pass after a full replay takes one: none was taken yet.
	h.waitFor("the first snapshot", func() bool {
		_, err := os.Stat(filepath.Join(dir, snapshotFile))
		return err == nil
	})
	first := readHeader(t, dir)
	evacuate(h, "r1", false, "n1")
	h.closed("r1")
	svc.cancel()
	if err := <-svc.done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	svc.done <- nil // for the cleanup

	if last := readHeader(t, dir); last.Events <= first.Events {
		t.Fatalf("the snapshot folds %d events, as at the start (%d): none was taken at shutdown", last.Events, first.Events)
	}
	full, fr := h.rebuild("")
	snap, sr := h.rebuild(dir)
	if !sr.Snapshot || sr.Events > 3 {
		t.Errorf("from the shutdown's snapshot: %+v (the full replay read %d); want at most the last pass's own events", sr, fr.Events)
	}
	if d := diff("state", image(t, full), image(t, snap)); d != "" {
		t.Fatalf("snapshot + tail differs from the full replay at %s", d)
	}
}

// readHeader returns the header of the snapshot in dir.
func readHeader(t *testing.T, dir string) header {
	t.Helper()
	h, _ := splitHeader(t, readSnapshot(t, dir))
	return h
}
