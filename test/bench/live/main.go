// Command live measures the switchover downtime and the total time of a
// live per-instance migration of a QEMU VM through the whole system (an
// Apache Kafka broker and the embedded Postgres, projector, planner
// service, one executor per node, gateway; driven over HTTP, automatic
// mode):
//
//   - shared: a VM on shared storage (rbd: one disk directory both nodes
//     reach), moved by the QEMU driver's live phases;
//   - zfs: a VM on zfs-local whose dataset holds -size-mib of data and its
//     disk, moved by the ZFS driver's live hand-over, its guest writing
//     its own disk at -write-mbps (qemu.Guest: IDE DMA paced by its own
//     clock, so its writes stop when QEMU pauses it); after the move the
//     bench checks every byte the guest wrote on the target
//     (qemu.ReadGuestWrites) and reports the rate it reached.
//
// The guests rewrite their memory all the time (qemu.FillForever), so the
// pre-copy has real dirty pages to chase. Figures go to stdout as a table
// and to -out as JSON.
//
//	go run ./test/bench/live [-size-mib 1024] [-write-mbps 5] [-zfs=true]
//
// The zfs part needs root and zfs-fuse (make test-deps); it creates and
// destroys its own file-backed pools. Run it alone on the machine's
// zfs-fuse (flock -o /tmp/drove-zfs.lock when others use it).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/drovehq/drove/executor/qemu"
	"github.com/drovehq/drove/test/bench/cli"
	"github.com/drovehq/drove/test/bench/system"
	"github.com/drovehq/drove/test/zfsenv"
)

// result is test/bench/results/live.json.
type result struct {
	DowntimeMSShared int64   `json:"downtime_ms_shared"`
	TotalSShared     float64 `json:"total_s_shared"`
	SyncsShared      int     `json:"syncs_shared"`
	DowntimeMSZFS    int64   `json:"downtime_ms_zfs"`
	TotalSZFS        float64 `json:"total_s_zfs"`
	SyncsZFS         int     `json:"syncs_zfs"`
	MessageZFS       string  `json:"message_zfs"`
	// Of the zfs downtime: the final delta, its send, and the content
	// checksums of the final snapshot on both nodes.
	FinalDeltaBytes int64   `json:"final_delta_bytes_zfs"`
	FinalSendMS     int64   `json:"final_send_ms_zfs"`
	ChecksumMS      int64   `json:"checksum_ms_zfs"`
	SizeMiB         int     `json:"size_mib"`
	WriteMBps       float64 `json:"write_mbps"`
	// GuestWriteMBps is the rate the guest reached during the move, its
	// chunks counted on the source before and on the target after;
	// GuestFlushEvery its chunks (64 KiB) per CACHE FLUSH.
	GuestWriteMBps  float64 `json:"guest_write_mbps"`
	GuestFlushEvery int     `json:"guest_flush_every"`
	// ChecksumReadBytes is what the checksum in the pause read on each
	// node (the blocks sent since the snapshot verified ahead).
	ChecksumReadBytes int64  `json:"checksum_read_bytes_zfs"`
	GuestMemoryMiB    int64  `json:"guest_memory_mib"`
	LoadAverage       string `json:"load_average"`
}

const memMiB = 32

func main() {
	sizeMiB := flag.Int("size-mib", 1024, "the zfs-local dataset's data, MiB")
	writeMBps := flag.Float64("write-mbps", 5, "the guest's writes to its disk on the dataset, MB/s")
	withZFS := flag.Bool("zfs", true, "also measure the zfs-local hand-over (root, zfs-fuse)")
	withShared := flag.Bool("shared", true, "measure the migration on shared storage")
	out := flag.String("out", "test/bench/results/live.json", "where the figures go, as JSON")
	downtimeOut := flag.String("downtime-out", "test/bench/results/downtime.json", "where each kind of move's downtimes go (workload's, reported, predicted), as JSON, beside the zfs bench's")
	moves := flag.Int("moves", 4, "moves of each kind, there and back: each predicted with what the ones before it measured (the first has no history); the first is the one measured for live.json")
	flag.Parse()
	r := result{SizeMiB: *sizeMiB, WriteMBps: *writeMBps, GuestMemoryMiB: memMiB}
	if *withShared {
		ms, err := benchShared(*moves)
		if err != nil {
			fail("shared", err)
		}
		m := ms[0]
		r.DowntimeMSShared, r.TotalSShared, r.SyncsShared = system.Downtime(m.InstanceMigration), m.Took.Seconds(), m.Syncs
		fmt.Printf("shared: %s\n", m.Message)
		writeDowntime(*downtimeOut, "shared_live", ms)
	}
	if *withZFS {
		ms, rate, err := benchZFS(*sizeMiB, *writeMBps, *moves)
		// With its pools gone, the daemon this bench started goes too.
		if err = errors.Join(err, zfsenv.StopDaemon()); err != nil {
			fail("zfs", err)
		}
		m := ms[0]
		r.GuestWriteMBps, r.GuestFlushEvery = rate, flushEvery
		r.DowntimeMSZFS, r.TotalSZFS, r.SyncsZFS, r.MessageZFS = system.Downtime(m.InstanceMigration), m.Took.Seconds(), m.Syncs, m.Message
		reps := switches.all()
		if len(reps) > 0 { // the first move's, as the rest of live.json
			sw := reps[0]
			final, _ := sw.FinalSync()
			r.FinalDeltaBytes, r.FinalSendMS = sw.FinalDelta, final.Duration.Milliseconds()
			r.ChecksumMS = sw.ChecksumTime.Milliseconds()
			r.ChecksumReadBytes = sw.ChecksumRead
		}
		fmt.Printf("zfs: %s\n", m.Message)
		writeDowntime(*downtimeOut, "zfs_live", ms)
		printSwitches(reps)
	}
	r.LoadAverage = cli.LoadAvg()
	fmt.Printf("\n%-40s %12s %10s %6s\n", "live migration", "downtime ms", "total s", "syncs")
	fmt.Printf("%-40s %12d %10.1f %6d\n", "shared storage (rbd)", r.DowntimeMSShared, r.TotalSShared, r.SyncsShared)
	if *withZFS {
		fmt.Printf("%-40s %12d %10.1f %6d\n", fmt.Sprintf("zfs-local, %d MiB, %.0f MB/s written", *sizeMiB, *writeMBps),
			r.DowntimeMSZFS, r.TotalSZFS, r.SyncsZFS)
	}
	if *withZFS {
		fmt.Printf("zfs downtime: final delta %d KiB, its send %d ms, checksums %d ms (%d KiB read on each node), the rest QEMU's pause, device state and resume\n",
			r.FinalDeltaBytes>>10, r.FinalSendMS, r.ChecksumMS, r.ChecksumReadBytes>>10)
		fmt.Printf("the guest wrote %.2f MB/s during the move (asked %.2f; a flush every %d KiB), every byte checked on the target\n",
			r.GuestWriteMBps, *writeMBps, flushEvery*64)
	}
	fmt.Printf("goal: downtime under 300 ms (KubeVirt's target is about 900 ms); load average %s\n", r.LoadAverage)
	if err := cli.WriteJSON(*out, r); err != nil {
		fail("out", err)
	}
}

// writeDowntime prints and records kind's moves in the downtime file.
func writeDowntime(path, kind string, ms []*system.Move) {
	d := system.Downtimes(ms...)
	system.PrintDowntimes(kind, d)
	if err := system.WriteDowntime(path, kind, d); err != nil {
		fail("downtime-out", err)
	}
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "bench live: %s: %v\n", what, err)
	os.Exit(1)
}

// qemuDrivers makes a QEMU driver per node; disk, if set, is where each
// finds an instance's disk (shared storage). cleanup kills their VMs.
func qemuDrivers(nodes []string, disk func(string) (string, error)) (drivers map[string]*qemu.Driver, cleanup func(), err error) {
	drivers = map[string]*qemu.Driver{}
	var dirs []string
	cleanup = func() {
		for _, d := range drivers {
			d.Destroy()
		}
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}
	for _, n := range nodes {
		dir, err := os.MkdirTemp("", "bl") // short: QMP socket paths are limited
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		dirs = append(dirs, dir)
		d, err := qemu.New(qemu.Config{Node: n, Dir: dir, Disk: disk, DefaultMemoryMiB: memMiB, DiskBus: "ide",
			PollInterval: 20 * time.Millisecond, QMPTimeout: 30 * time.Second,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		drivers[n] = d
	}
	return drivers, cleanup, nil
}

func shOut(cmd string) (string, error) {
	out, err := exec.Command("sh", "-c", cmd).Output()
	if err != nil {
		return "", fmt.Errorf("%s: %v", cmd, err)
	}
	return string(out), nil
}

func trim(s string) string { return strings.TrimSpace(s) }
