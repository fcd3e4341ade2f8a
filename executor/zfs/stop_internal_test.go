package zfs

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/drovehq/drove/test/zfsenv"
)

// A send stopped early, by its context or by a failing writer, at any
// point of its stream, leaves its snapshot free to destroy. On zfs-fuse
// a send cut by a closed pipe while its daemon waited on the full pipe
// (a slow receiver) left the snapshot busy for minutes; the driver there
// reads a stopped send to its end instead.
func TestStoppedSendFreesItsSnapshot(t *testing.T) {
	ctx := context.Background()
	pool := zfsenv.Pool(t, "stop", 256)
	ds := pool + "/d"
	if _, err := run(ctx, "create", ds); err != nil {
		t.Fatal(err)
	}
	mp, err := prop(ctx, ds, "mountpoint")
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 4<<20)
	rand.Read(data)
	if err := os.WriteFile(filepath.Join(mp, "disk"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	feat := Detect(ctx, pool)
	t.Logf("features: %s", feat.Mode())
	for i := range 48 {
		snap := ds + "@migrate-snap-1"
		if err := snapshot(ctx, snap); err != nil {
			t.Fatal(err)
		}
		// Stops at every stage: before the daemon sends, while it
		// waits on a full pipe, in the middle of the stream.
		sctx, cancel := context.WithCancel(ctx)
		at := time.Duration(i/2%8) * 2 * time.Millisecond
		w := &slowReceiver{stall: 50 * time.Millisecond, fail: i%2 == 1}
		stop := time.AfterFunc(at, cancel)
		if w.fail {
			stop.Stop()
		}
		err := send(sctx, w, !feat.SendStopsCleanly, "-R", snap)
		stop.Stop()
		cancel()
		if err == nil {
			t.Fatalf("stop %d: the send ran to its end", i)
		}
		if err := destroy(ctx, snap); err != nil {
			t.Fatalf("stop %d (%s): %v", i, w.how(at), err)
		}
	}
}

// slowReceiver stalls before its first write, long enough for the
// daemon to fill the pipe and wait on it; with fail, that write fails.
type slowReceiver struct {
	stall   time.Duration
	fail    bool
	started bool
}

func (s *slowReceiver) Write(p []byte) (int, error) {
	if !s.started {
		s.started = true
		time.Sleep(s.stall) // the slow receiver, not a synchronisation
	}
	if s.fail {
		return 0, errors.New("the receiver went away")
	}
	return len(p), nil
}

func (s *slowReceiver) how(at time.Duration) string {
	if s.fail {
		return "a failed write"
	}
	return fmt.Sprintf("a cancel after %s", at)
}
