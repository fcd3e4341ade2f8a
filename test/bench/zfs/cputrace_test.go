package main

import (
	"testing"
	"time"
)

func TestCPUTraceOverTakesTheSamplesAroundTheSpan(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	tr := &cpuTrace{samples: []cpuSample{
		{at: at(0), daemon: 7, drove: 1, zfs: 10, busy: 100},
		{at: at(100), daemon: 7, drove: 1.1, zfs: 10.1, busy: 100.2},
		{at: at(200), daemon: 7, drove: 1.3, zfs: 10.2, busy: 100.4},
		{at: at(300), daemon: 7, drove: 1.6, zfs: 10.4, busy: 100.6},
	}}
	u, ok := tr.over(at(150), at(250)) // from the sample at 100 to the one at 300
	if !ok || !near(u.Drove, 0.5) || !near(u.ZFS, 0.3) || !near(u.Busy, 0.4) || !near(u.Seconds, 0.2) {
		t.Fatalf("over(150 ms, 250 ms) = %+v, %v; want drove 0.5, zfs 0.3, busy 0.4 over 0.2 s", u, ok)
	}
	if _, ok := tr.over(at(250), at(400)); ok {
		t.Fatal("a span past the last sample was covered")
	}
	tr.samples = append(tr.samples, cpuSample{at: at(400), daemon: 8, zfs: 12}) // the daemon restarted
	if _, ok := tr.over(at(250), at(400)); ok {
		t.Fatal("a span across a restart of the daemon gave its CPU")
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestCPUTraceSamplesUntilStopped(t *testing.T) {
	tr := traceCPU(time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for {
		tr.mu.Lock()
		n := len(tr.samples)
		tr.mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d samples after 10 s", n)
		}
		time.Sleep(time.Millisecond) // polling the sampler, with a deadline
	}
	tr.Stop()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	last := tr.samples[len(tr.samples)-1]
	if last.drove <= 0 || last.busy <= 0 || !last.at.After(tr.samples[0].at) {
		t.Fatalf("the last sample %+v says no CPU used or no time passed", last)
	}
}
