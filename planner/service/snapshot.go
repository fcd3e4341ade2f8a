package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/drovehq/drove/events/kafka"
)

// A snapshot is the service's whole state (the four folds) with the log
// positions it covers, so that a start reads only the log after them. It is
// an optimisation and nothing more: the log stays the truth, and a snapshot
// that is missing, unreadable, damaged, of another format or of another
// log (a topic deleted and created again, or a position the log does not
// have) is ignored for a full replay, with the reason logged.
//
// It is a file in Config.SnapshotDir, written to a temporary name, synced
// and renamed, so a crash leaves the last one intact. It is taken between
// passes, when every decision folded into the state is in the log (an
// append that fails ends the run before any snapshot); the decisions whose
// events lie after the positions are read again after a restore, which the
// folds take as the no-ops they are when the service reads back its own.
//
// The file is a stream, written and read one object at a time so that
// neither side holds it whole (snapfile.go): the header (version first, so
// another format is told before anything else is read), the inventory
// (planner/inventory's Encode: nodes and instances in a binary codec, a
// tenth of a second of CPU to restore 100,000 instances), the jobs,
// migrations and nodes folds (their MarshalJSON: they hold only what is
// active, so they are small), then a trailer with the CRC-32C of
// everything before it, so a damaged file is told from one that merely
// decodes. It is not compressed: 10 MB at 100,000 instances.

// snapshotVersion changes whenever the file's layout or a fold's encoding
// does: a snapshot of another version is ignored.
const snapshotVersion = 4

const snapshotFile = "planner.snapshot"

// legacySnapshotFile is where builds before version 3 kept theirs (one
// gzipped document): found, it is reported as of another format.
const legacySnapshotFile = "planner.snapshot.json.gz"

// header opens the file: what the snapshot covers.
type header struct {
	Version   int               `json:"version"`
	Taken     time.Time         `json:"taken"`
	TopicIDs  map[string]string `json:"topic_ids"`
	Positions []position        `json:"positions"`
	// Events counts the events the state folds, snapshot after snapshot.
	Events int64 `json:"events"`
}

// snapshot is a file's content: its header and the state.
type snapshot struct {
	header
	st *state
}

type position struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

func (h *header) from() kafka.Positions {
	out := kafka.Positions{}
	for _, p := range h.Positions {
		out[kafka.TopicPartition{Topic: p.Topic, Partition: p.Partition}] = p.Offset
	}
	return out
}

// Restart says how the last start of Run rebuilt its state; see Service.Restart.
type Restart struct {
	// Snapshot is true when the state came from a snapshot and the log
	// after it; Ignored says why none was used, if one was found.
	Snapshot bool
	Ignored  string
	// Events is how many events the start read from the log.
	Events int
	// Restore is how long reading the snapshot took (part of Took).
	Restore time.Duration
	// Took is from the start of reading to ready (decisions taken).
	Took time.Duration
}

// open restores the newest usable snapshot, if any, and returns a Reader
// positioned after it (at the start of the log without one).
func (l *loop) open(ctx context.Context) (*kafka.Reader, error) {
	cfg := l.svc.cfg
	opts := kafka.ReadOptions{Topics: topics, Follow: true, MaxWait: cfg.Tick}
	l.st = newState(cfg.Clock)
	began := time.Now()
	snap, why := l.load(ctx)
	l.restart.Restore = time.Since(began)
	if snap != nil {
		opts.From = snap.from()
		rd, err := kafka.NewReader(ctx, cfg.Kafka, opts)
		if err != nil {
			return nil, err
		}
		if why = covers(rd, opts.From); why == "" {
			l.st = snap.st
			l.st.migs.SetClock(cfg.Clock)
			l.st.nodes.SetClock(time.Now) // as newState: leases are judged on the wall clock
			l.restart.Snapshot, l.events = true, snap.Events
			l.topicIDs, l.snapAt = snap.TopicIDs, time.Now()
			l.svc.log.Info("state restored from a snapshot", "taken", snap.Taken, "events", snap.Events,
				"took", l.restart.Restore)
			return rd, nil
		}
		rd.Close()
	}
	if why != "" {
		l.restart.Ignored = why
		l.svc.log.Warn("snapshot ignored: replaying the whole log", "why", why)
	}
	opts.From = nil
	return kafka.NewReader(ctx, cfg.Kafka, opts)
}

// covers says why the log does not hold the positions a snapshot was
// taken at ("" if it does): every partition must be there, with the
// position between its start and its end.
func covers(rd *kafka.Reader, from kafka.Positions) string {
	pos, ends := rd.Position(), rd.Ends()
	if len(pos) != len(from) {
		return fmt.Sprintf("the log has %d partitions, the snapshot %d", len(pos), len(from))
	}
	for tp, at := range from {
		switch end, ok := ends[tp]; {
		case !ok:
			return fmt.Sprintf("partition %s is not in the log", tp)
		case at > end:
			return fmt.Sprintf("partition %s ends at %d, before the snapshot's position %d", tp, end, at)
		case pos[tp] != at:
			return fmt.Sprintf("partition %s no longer holds position %d", tp, at)
		}
	}
	return ""
}

// load reads the snapshot file; nil and why when there is none to use.
func (l *loop) load(ctx context.Context) (*snapshot, string) {
	dir := l.svc.cfg.SnapshotDir
	if dir == "" {
		return nil, ""
	}
	path := filepath.Join(dir, snapshotFile)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, legacySnapshotFile)); err == nil {
			return nil, fmt.Sprintf("%s is of an older format, this build reads %d", legacySnapshotFile, snapshotVersion)
		}
		return nil, ""
	}
	// The broker answers the topics' ids while the file is read.
	type answer struct {
		ids map[string]string
		err error
	}
	asked := make(chan answer, 1)
	go func() {
		ids, err := kafka.TopicIDs(ctx, l.svc.cfg.Kafka, topics...)
		asked <- answer{ids, err}
	}()
	snap, err := readSnapshotFile(path)
	a := <-asked
	if err != nil {
		return nil, err.Error()
	}
	ids, err := a.ids, a.err
	if err != nil {
		return nil, "topic ids: " + err.Error()
	}
	if !maps.Equal(ids, snap.TopicIDs) {
		return nil, "taken of another log: the topics' ids differ"
	}
	return snap, ""
}

// maybeSnapshot takes a snapshot at a position between passes once
// SnapshotEvery events were folded since the last, or SnapshotInterval
// passed with any folded: a start after a crash then reads at most that
// much of the log. Encoding the state into the file happens here, on the
// loop (the state is the loop's); syncing and renaming it in the
// background, one snapshot at a time.
func (l *loop) maybeSnapshot(ctx context.Context, at kafka.Positions) {
	cfg := l.svc.cfg
	due := l.folded >= cfg.SnapshotEvery || l.folded > 0 && time.Since(l.snapAt) >= cfg.SnapshotInterval
	if cfg.SnapshotDir == "" || !due || l.writing != nil && !closed(l.writing) {
		return
	}
	tmp, ok := l.encodeSnapshot(ctx, at)
	if !ok {
		return
	}
	done := make(chan struct{})
	l.writing = done
	go func() {
		defer close(done)
		l.commitSnapshot(tmp)
	}()
}

// lastSnapshot takes a snapshot as the service stops, at the position of
// the last pass (at), so the next start reads nothing it has folded. The
// caller makes sure the state is that pass's: nothing folded after it.
func (l *loop) lastSnapshot(ctx context.Context, at kafka.Positions) {
	if l.svc.cfg.SnapshotDir == "" || l.folded == 0 || at == nil {
		return
	}
	l.waitWrites()
	// ctx has ended: the topics' ids, if still to read, get a moment.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if tmp, ok := l.encodeSnapshot(ctx, at); ok {
		l.commitSnapshot(tmp)
		l.svc.log.Info("snapshot taken at shutdown", "events", l.events)
	}
}

// encodeSnapshot writes the state at positions at to a temporary file in
// the snapshot directory and returns its name.
func (l *loop) encodeSnapshot(ctx context.Context, at kafka.Positions) (string, bool) {
	cfg := l.svc.cfg
	if l.topicIDs == nil {
		ids, err := kafka.TopicIDs(ctx, cfg.Kafka, topics...)
		if err != nil {
			l.svc.log.Warn("snapshot skipped: topic ids", "err", err)
			return "", false
		}
		l.topicIDs = ids
	}
	l.events += int64(l.folded)
	l.folded, l.snapAt = 0, time.Now()
	h := header{Version: snapshotVersion, Taken: time.Now().UTC(), TopicIDs: l.topicIDs, Events: l.events}
	for tp, off := range at {
		h.Positions = append(h.Positions, position{tp.Topic, tp.Partition, off})
	}
	slices.SortFunc(h.Positions, func(a, b position) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	began := time.Now()
	tmp, err := createSnapshotFile(cfg.SnapshotDir, &snapshot{h, l.st})
	if err != nil {
		l.svc.log.Error("snapshot not written", "err", err)
		return "", false
	}
	l.svc.log.Debug("snapshot encoded", "events", l.events, "took", time.Since(began))
	return tmp, true
}

// commitSnapshot makes the temporary file tmp the snapshot.
func (l *loop) commitSnapshot(tmp string) {
	if err := syncAndRename(tmp, filepath.Join(l.svc.cfg.SnapshotDir, snapshotFile)); err != nil {
		l.svc.log.Error("snapshot not written", "err", err)
		return
	}
	// The format before version 3 had its own name: gone for good now.
	_ = os.Remove(filepath.Join(l.svc.cfg.SnapshotDir, legacySnapshotFile))
	l.svc.m.snapshots.Inc()
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// waitWrites waits for the snapshot being written, if any.
func (l *loop) waitWrites() {
	if l.writing != nil {
		<-l.writing
	}
}
