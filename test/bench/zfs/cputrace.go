package main

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/drovehq/drove/test/bench/cli"
	"github.com/drovehq/drove/test/bench/cpu"
	"github.com/drovehq/drove/test/zfsenv"
)

// cpuTrace samples, every interval while the system bench runs, the CPU
// seconds of this process (all of Drove: the executors, the planner, the
// projector, the gateway; not Postgres, the broker or the workload), of
// the zfs-fuse daemon (every send and receive, the bare ones too) and of
// the machine. Over a bare run or a first sync it says where the cores
// went: whether the copy waited for the CPU (nearly all of it busy), and
// whose work filled it.
type cpuTrace struct {
	mu      sync.Mutex
	samples []cpuSample
	done    chan struct{}
}

type cpuSample struct {
	at               time.Time
	daemon           int     // the zfs-fuse daemon's pid; 0: none found
	drove, zfs, busy float64 // CPU seconds so far
}

// cpuUse is what was used over a span, in CPU seconds.
type cpuUse struct {
	Drove, ZFS, Busy float64
	Seconds          float64 // the span sampled
}

// traceCPU starts sampling. Stop does not wait for a read under way:
// /proc of a process stuck on a deadlocked zfs-fuse can block.
func traceCPU(interval time.Duration) *cpuTrace {
	t := &cpuTrace{done: make(chan struct{})}
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		pid := 0
		for {
			_, z, ok := cpu.Stat(strconv.Itoa(pid))
			if !ok { // not found yet, or restarted by the watchdog
				pid = max(zfsenv.DaemonPid(), 0)
				_, z, ok = cpu.Stat(strconv.Itoa(pid))
			}
			if !ok {
				pid = 0
			}
			busy, _ := cpu.Machine()
			s := cpuSample{at: time.Now(), daemon: pid, drove: cpu.Self(), zfs: z, busy: busy}
			t.mu.Lock()
			t.samples = append(t.samples, s)
			t.mu.Unlock()
			select {
			case <-t.done:
				return
			case <-tick.C:
			}
		}
	}()
	return t
}

func (t *cpuTrace) Stop() { close(t.done) }

// over is the use between the last sample at or before from and the
// first at or after to; ok is false when the samples do not cover both.
func (t *cpuTrace) over(from, to time.Time) (u cpuUse, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var a, b *cpuSample
	for i := range t.samples {
		s := &t.samples[i]
		if !s.at.After(from) {
			a = s
		}
		if b == nil && !s.at.Before(to) {
			b = s
		}
	}
	if a == nil || b == nil || a.daemon == 0 || a.daemon != b.daemon {
		return u, false // no daemon found, or it restarted between
	}
	return cpuUse{Drove: b.drove - a.drove, ZFS: b.zfs - a.zfs, Busy: b.busy - a.busy,
		Seconds: b.at.Sub(a.at).Seconds()}, true
}

// cpuFigures is where the CPU went in the bare runs and in the first
// syncs, as medians over each: CPU seconds per GiB copied, of the zfs-fuse
// daemon and of Drove, and how many of the machine's CPUs were busy. A
// sync that kept nearly all of them busy waited for the CPU, and its
// per-GiB figures say whose work filled it.
type cpuFigures struct {
	CPUs            int     `json:"cpus"`
	BareZFSPerGiB   float64 `json:"bare_zfs_s_per_gib"`
	BareBusyCPUs    float64 `json:"bare_busy_cpus"`
	SyncZFSPerGiB   float64 `json:"sync_zfs_s_per_gib"`
	SyncDrovePerGiB float64 `json:"sync_drove_s_per_gib"`
	SyncBusyCPUs    float64 `json:"sync_busy_cpus"`
}

func cpuOf(t *cpuTrace, bares, syncs []span) cpuFigures {
	f := cpuFigures{CPUs: runtime.NumCPU()}
	var zfsB, busyB, zfsS, droveS, busyS []float64
	for _, s := range bares {
		if u, ok := t.over(s.from, s.to); ok {
			zfsB, busyB = append(zfsB, u.ZFS/gib(s.bytes)), append(busyB, u.Busy/u.Seconds)
		}
	}
	for _, s := range syncs {
		if u, ok := t.over(s.from, s.to); ok {
			zfsS, droveS, busyS = append(zfsS, u.ZFS/gib(s.bytes)), append(droveS, u.Drove/gib(s.bytes)), append(busyS, u.Busy/u.Seconds)
		}
	}
	if len(zfsB) == 0 || len(zfsS) == 0 {
		fmt.Println("system: CPU: the zfs-fuse daemon's figures are missing (none found, or it restarted)")
		return f
	}
	f.BareZFSPerGiB, f.BareBusyCPUs = round3(cli.Median(zfsB)), round3(cli.Median(busyB))
	f.SyncZFSPerGiB, f.SyncDrovePerGiB, f.SyncBusyCPUs = round3(cli.Median(zfsS)), round3(cli.Median(droveS)), round3(cli.Median(busyS))
	fmt.Printf("system: CPU seconds per GiB: bare runs zfs-fuse %.2f (%.2f of %d CPUs busy); first syncs zfs-fuse %.2f + Drove %.2f (%.2f busy)\n",
		f.BareZFSPerGiB, f.BareBusyCPUs, f.CPUs, f.SyncZFSPerGiB, f.SyncDrovePerGiB, f.SyncBusyCPUs)
	return f
}

func gib(bytes int64) float64 { return float64(bytes) / (1 << 30) }
