package main

import (
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rssPeak samples this process's resident set while a phase runs, and
// its Go heap's live bytes (as the last GC found them). The resident set
// holds the in-process broker and its log, and the collector lets the
// heap grow to twice what is live, so the resident set's growth in a
// phase grows with the log too; the live heap's peak over what was live
// before the phase is the projector's working set (and the broker's
// fetches in flight).
type rssPeak struct {
	before, peak         int64 // KiB
	liveBefore, livePeak uint64
	stop                 chan struct{}
	wg                   sync.WaitGroup
	mu                   sync.Mutex
}

// sampleRSS starts sampling every 10 ms; call done to stop and read. It
// collects first, so the live heap before the phase is what is live now,
// not what the last collection found (before the log was appended, say).
func sampleRSS() *rssPeak {
	runtime.GC()
	r := &rssPeak{before: rssKiB(), liveBefore: heapLive(), stop: make(chan struct{})}
	r.peak, r.livePeak = r.before, r.liveBefore
	r.wg.Go(func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
			}
			v, live := rssKiB(), heapLive()
			r.mu.Lock()
			r.peak, r.livePeak = max(r.peak, v), max(r.livePeak, live)
			r.mu.Unlock()
		}
	})
	return r
}

// done stops sampling and returns the resident set before the phase and
// its peak during it, in MiB.
func (r *rssPeak) done() (before, peak float64) {
	close(r.stop)
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return float64(r.before) / 1024, float64(r.peak) / 1024
}

// liveGrowthMiB is how far the live heap rose over what was live before
// the phase, in MiB; call after done.
func (r *rssPeak) liveGrowthMiB() float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return float64(r.livePeak-min(r.liveBefore, r.livePeak)) / (1 << 20)
}

// heapLive is the heap the last GC found live.
func heapLive() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// rssKiB is VmRSS from /proc/self/status; 0 off Linux.
func rssKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) > 0 {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n
			}
		}
	}
	return 0
}
