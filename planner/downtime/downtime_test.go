package downtime

import (
	"strings"
	"testing"
	"time"

	"github.com/drovehq/drove/events"
)

// A prediction is the sum of its parts: the fixed overhead, the final
// delta at the link's rate, and its checksum when the move checks one.
func TestPredictFromParts(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	for _, c := range []struct {
		name  string
		parts Parts
		want  time.Duration
		says  string
	}{
		{"overhead only", Parts{Overhead: 600 * time.Millisecond}, 600 * time.Millisecond, "600 ms stop and start"},
		{"delta at the link's rate", Parts{Overhead: 100 * time.Millisecond, DeltaBytes: 10 * mib, LinkBytesPerSecond: 100 * mib},
			200 * time.Millisecond, "100 ms final delta of 10.0 MiB at 100.0 MiB/s"},
		{"checksum of the delta", Parts{DeltaBytes: 20 * mib, LinkBytesPerSecond: 100 * mib, ChecksumBytesPerSecond: 200 * mib},
			300 * time.Millisecond, "100 ms checksum of it at 200.0 MiB/s"},
		{"no link measured: the planner's default", Parts{DeltaBytes: 50 * mib}, 500 * time.Millisecond, "at 100.0 MiB/s"},
		{"a negative delta is none", Parts{Overhead: time.Second, DeltaBytes: -5}, time.Second, "1000 ms = "},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := Predict(c.parts)
			if p.Total() != c.want || !strings.Contains(p.String(), c.says) {
				t.Errorf("Predict(%+v) = %s, %q; want %s, %q", c.parts, p.Total(), p, c.want, c.says)
			}
		})
	}
}

// The stated defaults: a stopped instance costs nothing; copied disks
// the offline switch's figure; shared storage the live one's. Only copied
// disks are checksummed.
func TestDefaults(t *testing.T) {
	t.Parallel()
	if d, why := DefaultOverhead(events.StorageZFSLocal, events.RunStopped); d != 0 || !strings.Contains(why, "nothing to stop") {
		t.Errorf("stopped: %s, %q", d, why)
	}
	if d, why := DefaultOverhead(events.StorageZFSLocal, events.RunRunning); d != CopiedOverhead || !strings.Contains(why, "155 ms assumed") {
		t.Errorf("zfs-local: %s, %q", d, why)
	}
	if d, why := DefaultOverhead(events.StorageRBD, events.RunRunning); d != SharedOverhead || !strings.Contains(why, "live switch") {
		t.Errorf("rbd: %s, %q", d, why)
	}
	if ChecksumRate(events.StorageZFSLocal) == 0 || ChecksumRate(events.StorageRBD) != 0 {
		t.Error("only copied disks are checksummed")
	}
}

// A budget of 0 is none; otherwise the prediction fits up to the budget
// itself.
func TestFits(t *testing.T) {
	t.Parallel()
	p := Predict(Parts{Overhead: 300 * time.Millisecond})
	for budget, want := range map[time.Duration]bool{0: true, 300 * time.Millisecond: true, 299 * time.Millisecond: false} {
		if Fits(p, budget) != want {
			t.Errorf("Fits(300 ms, %s) = %v", budget, !want)
		}
	}
}
