package service

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/planner/inventory"
	"github.com/drovehq/drove/planner/jobs"
	"github.com/drovehq/drove/planner/migration"
	"github.com/drovehq/drove/planner/nodes"
)

// A snapshot is the service's whole state (the three folds) with the log
// positions it covers, so that a start reads only the log after them. It is
// an optimisation and nothing more: the log stays the truth, and a snapshot
// that is missing, unreadable, of another format or of another log (a
// topic deleted and created again, or a position the log does not have) is
// ignored for a full replay.
//
// It is a file in Config.SnapshotDir, written whole to a temporary name and
// renamed, so a crash leaves the last one intact. It is taken between
// passes, when every decision folded into the state is in the log (an
// append that fails ends the run before any snapshot); the decisions whose
// events lie after the positions are read again after a restore, which the
// folds take as the no-ops they are when the service reads back its own.

// snapshotVersion changes whenever a fold's encoding does: a snapshot of
// another version is ignored.
const snapshotVersion = 2

const snapshotFile = "planner.snapshot.json.gz"

// snapshot is the file's content.
type snapshot struct {
	Version   int               `json:"version"`
	Taken     time.Time         `json:"taken"`
	TopicIDs  map[string]string `json:"topic_ids"`
	Positions []position        `json:"positions"`
	// Events counts the events the state folds, snapshot after snapshot.
	Events     int64                `json:"events"`
	Inventory  *inventory.Inventory `json:"inventory"`
	Jobs       *jobs.State          `json:"jobs"`
	Migrations *migration.State     `json:"migrations"`
	Nodes      *nodes.State         `json:"nodes"`
}

type position struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

func (s *snapshot) from() kafka.Positions {
	out := kafka.Positions{}
	for _, p := range s.Positions {
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
	// Took is from the start of reading to ready (decisions taken).
	Took time.Duration
}

// open restores the newest usable snapshot, if any, and returns a Reader
// positioned after it (at the start of the log without one).
func (l *loop) open(ctx context.Context) (*kafka.Reader, error) {
	cfg := l.svc.cfg
	opts := kafka.ReadOptions{Topics: topics, Follow: true, MaxWait: cfg.Tick}
	l.st = newState(cfg.Clock)
	snap, why := l.load(ctx)
	if snap != nil {
		opts.From = snap.from()
		rd, err := kafka.NewReader(ctx, cfg.Kafka, opts)
		if err != nil {
			return nil, err
		}
		if why = covers(rd, opts.From); why == "" {
			l.st = &state{inv: snap.Inventory, reqs: snap.Jobs, migs: snap.Migrations, nodes: snap.Nodes}
			l.st.migs.SetClock(cfg.Clock)
			l.st.nodes.SetClock(time.Now) // as newState: leases are judged on the wall clock
			l.restart.Snapshot, l.events = true, snap.Events
			l.svc.log.Info("state restored from a snapshot", "taken", snap.Taken, "events", snap.Events)
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
	f, err := os.Open(filepath.Join(dir, snapshotFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ""
	}
	if err != nil {
		return nil, err.Error()
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, "unreadable: " + err.Error()
	}
	var snap snapshot
	if err := json.NewDecoder(zr).Decode(&snap); err != nil {
		return nil, "unreadable: " + err.Error()
	}
	if snap.Version != snapshotVersion || snap.Inventory == nil || snap.Jobs == nil || snap.Migrations == nil || snap.Nodes == nil {
		return nil, fmt.Sprintf("format %d, this build reads %d", snap.Version, snapshotVersion)
	}
	ids, err := kafka.TopicIDs(ctx, l.svc.cfg.Kafka, topics...)
	if err != nil {
		return nil, "topic ids: " + err.Error()
	}
	if !maps.Equal(ids, snap.TopicIDs) {
		return nil, "taken of another log: the topics' ids differ"
	}
	return &snap, ""
}

// maybeSnapshot takes a snapshot once SnapshotEvery events were folded
// since the last, at a position between passes. Encoding the state
// happens here, on the loop; compressing and writing it in the background,
// one at a time.
func (l *loop) maybeSnapshot(ctx context.Context, at kafka.Positions) {
	cfg := l.svc.cfg
	if cfg.SnapshotDir == "" || l.folded < cfg.SnapshotEvery || l.writing != nil && !closed(l.writing) {
		return
	}
	if l.topicIDs == nil {
		ids, err := kafka.TopicIDs(ctx, cfg.Kafka, topics...)
		if err != nil {
			l.svc.log.Warn("snapshot skipped: topic ids", "err", err)
			return
		}
		l.topicIDs = ids
	}
	l.events += int64(l.folded)
	l.folded = 0
	snap := snapshot{Version: snapshotVersion, Taken: time.Now().UTC(), TopicIDs: l.topicIDs, Events: l.events,
		Inventory: l.st.inv, Jobs: l.st.reqs, Migrations: l.st.migs, Nodes: l.st.nodes}
	for tp, off := range at {
		snap.Positions = append(snap.Positions, position{tp.Topic, tp.Partition, off})
	}
	b, err := json.Marshal(snap)
	if err != nil {
		l.svc.log.Error("snapshot not encoded", "err", err)
		return
	}
	done := make(chan struct{})
	l.writing = done
	go func() {
		defer close(done)
		if err := writeSnapshot(cfg.SnapshotDir, b); err != nil {
			l.svc.log.Error("snapshot not written", "err", err)
			return
		}
		l.svc.m.snapshots.Inc()
	}()
}

func closed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// writeSnapshot writes b compressed to the snapshot file, atomically.
func writeSnapshot(dir string, b []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, snapshotFile+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	zw := gzip.NewWriter(tmp)
	_, err = io.Copy(zw, bytes.NewReader(b))
	err = errors.Join(err, zw.Close(), tmp.Sync(), tmp.Close())
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(dir, snapshotFile))
}

// waitWrites waits for the snapshot being written, if any.
func (l *loop) waitWrites() {
	if l.writing != nil {
		<-l.writing
	}
}
