package main

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rssPeak samples this process's resident set while a phase runs: the
// projector's memory is what the peak adds to the resident set before the
// phase (which holds the in-process broker and its log).
type rssPeak struct {
	before int64 // KiB
	peak   int64 // KiB
	stop   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
}

// sampleRSS starts sampling every 10 ms; call done to stop and read.
func sampleRSS() *rssPeak {
	r := &rssPeak{before: rssKiB(), stop: make(chan struct{})}
	r.peak = r.before
	r.wg.Go(func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
			}
			if v := rssKiB(); v > 0 {
				r.mu.Lock()
				r.peak = max(r.peak, v)
				r.mu.Unlock()
			}
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
