package allinone_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/drovehq/drove/deploy/allinone"
	"github.com/drovehq/drove/executor/process"
)

// A workload stopped between the truncation of "pos" and its write (one
// stop in ten on a loaded machine) left it empty, and the next start died
// at once on it: the workload starts the ring over instead and writes.
func TestWorkloadStartsOverOnAnEmptyPos(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pos"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	argv := allinone.Workload{Block: 4096, Blocks: 8, Interval: 10 * time.Millisecond}.Command()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "DROVE_DATA="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	deadline := time.After(time.Minute)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "pos"))
		if p := strings.TrimSpace(string(b)); p != "" && p != "0" {
			return // it wrote a block and moved on
		}
		select {
		case <-exited:
			t.Fatalf("the workload exited on an empty pos: %v", waitErr)
		case <-deadline:
			t.Fatal("the workload wrote nothing in a minute")
		case <-time.After(10 * time.Millisecond): // polling the file it writes, under a deadline
		}
	}
}

// The workload's timeline tells a stop and start from its own writes:
// the gap it shows across a restart covers at least the time it was
// stopped, and not much more than one interval beyond it.
func TestWorkloadTimelineShowsTheRestartGap(t *testing.T) {
	dir := t.TempDir()
	w := allinone.Workload{Block: 4096, Blocks: 8, Interval: 10 * time.Millisecond}
	run := func() (stop func()) { return startWorkload(t, w, dir) }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first := time.Now()
	stop := run()
	if _, err := waitWrites(ctx, dir, 5); err != nil {
		t.Fatal(err)
	}
	stop()
	stopped := time.Now()
	// Held stopped for a known while: the gap must cover it (the
	// downtime under test, not a synchronisation).
	time.Sleep(300 * time.Millisecond)
	restarted := time.Now()
	run()
	gap, err := process.WorkloadDowntime(ctx, dir, restarted)
	if err != nil {
		t.Fatal(err)
	}
	if held := restarted.Sub(stopped); gap < held || gap > held+2*time.Second {
		t.Errorf("the timeline's gap is %s; the workload was stopped for %s", gap, held)
	}
	ws, err := process.ReadTimeline(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := process.RestartGap(ws, first); !ok {
		t.Errorf("no restart in the timeline: %+v", ws)
	}
	for i := 1; i < len(ws); i++ {
		if ws[i].Seq != ws[i-1].Seq+1 {
			t.Errorf("the timeline skips from %d to %d", ws[i-1].Seq, ws[i].Seq)
		}
	}
	t.Logf("stopped for %s; the timeline's gap %s over %d writes", restarted.Sub(stopped), gap, len(ws))
}

// startWorkload runs w on dir in a process group of its own, killed
// whole by the returned stop (at the latest at the test's cleanup), as
// the process runtime stops it.
func startWorkload(t *testing.T, w allinone.Workload, dir string) (stop func()) {
	t.Helper()
	argv := w.Command()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "DROVE_DATA="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	var once sync.Once
	stop = func() { once.Do(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-done }) }
	t.Cleanup(stop)
	return stop
}

// waitWrites waits until the timeline in dir holds n writes.
func waitWrites(ctx context.Context, dir string, n int) ([]process.TimelineWrite, error) {
	for {
		ws, err := process.ReadTimeline(dir)
		if err == nil && len(ws) >= n {
			return ws, nil
		}
		select {
		case <-ctx.Done():
			return ws, fmt.Errorf("%d writes in the timeline, want %d: %v (%v)", len(ws), n, err, ctx.Err())
		case <-time.After(10 * time.Millisecond): // polling the file it writes, under a deadline
		}
	}
}

// The timeline is a ring of TimelineSlots records: a workload that
// starts near its end writes the last slots, then goes on from the first
// (the script writes through a descriptor it opens again at the wrap),
// one write each interval.
func TestWorkloadTimelineWrapsAround(t *testing.T) {
	dir := t.TempDir()
	from := int64(process.TimelineSlots - 2)
	if err := os.WriteFile(filepath.Join(dir, "pos"), fmt.Appendf(nil, "%020d\n", from), 0o644); err != nil {
		t.Fatal(err)
	}
	w := allinone.Workload{Block: 4096, Blocks: 8, Interval: 10 * time.Millisecond}
	startWorkload(t, w, dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws, err := waitWrites(ctx, dir, 5)
	if err != nil {
		t.Fatal(err)
	}
	// Paced, not spinning: the fifth write comes four intervals after
	// the first at the earliest (load only delays it).
	if span := ws[4].At.Sub(ws[0].At); span < 2*w.Interval {
		t.Errorf("5 writes in %s at one each %s: the workload does not wait", span, w.Interval)
	}
	b, err := os.ReadFile(filepath.Join(dir, process.TimelineFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != process.TimelineSlots*process.TimelineRecordBytes {
		t.Errorf("the timeline is %d bytes, want %d slots of %d", len(b), process.TimelineSlots, process.TimelineRecordBytes)
	}
	for seq := from; seq < from+5; seq++ {
		off := int(seq%process.TimelineSlots) * process.TimelineRecordBytes
		if want := fmt.Sprintf("%020d ", seq); string(b[off:off+21]) != want {
			t.Errorf("slot %d holds %q, want record %d", seq%process.TimelineSlots, b[off:off+process.TimelineRecordBytes], seq)
		}
	}
}

// The workload writes its ring through one descriptor, kept open (every
// open costs a zfs-fuse round trip or more): each write lands in its own
// block, across the ring's wrap and a restart from "pos", and the ring
// never grows past its blocks. (dd seeks its standard output from where
// it stands, not from the start: an offset left unchecked walks off the
// end.)
func TestWorkloadRingKeepsItsBlocks(t *testing.T) {
	dir := t.TempDir()
	w := allinone.Workload{Block: 4096, Blocks: 8, Interval: 10 * time.Millisecond}
	size, blocks := int(w.Block), int(w.Blocks)
	ring := make([]byte, size*blocks)
	for i := range ring {
		ring[i] = byte('A' + i/size)
	}
	if err := os.WriteFile(filepath.Join(dir, "ring"), ring, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pos"), fmt.Appendf(nil, "%020d\n", 5), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stop := startWorkload(t, w, dir)
	if _, err := waitWrites(ctx, dir, 2); err != nil {
		t.Fatal(err)
	}
	stop()
	stop = startWorkload(t, w, dir) // from "pos", mid-ring
	ws, err := waitWrites(ctx, dir, 6)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if ws, err = process.ReadTimeline(dir); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "ring"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ring) {
		t.Fatalf("the ring is %d bytes after %d writes, want its %d blocks of %d", len(got), len(ws), blocks, size)
	}
	written := map[int]bool{}
	for _, x := range ws {
		written[int(x.Seq%int64(blocks))] = true
	}
	// A stop between a block and its record leaves the next block
	// written with no record of it.
	maybe := int((ws[len(ws)-1].Seq + 1) % int64(blocks))
	for b := range blocks {
		blk, was := got[b*size:(b+1)*size], ring[b*size:(b+1)*size]
		switch same := string(blk) == string(was); {
		case written[b] && same:
			t.Errorf("block %d: written by the timeline, yet as it was", b)
		case !written[b] && !same && b != maybe:
			t.Errorf("block %d: not written by the timeline, yet changed", b)
		}
	}
}
