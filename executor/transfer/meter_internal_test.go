package transfer

import (
	"testing"
	"time"
)

// clock is a test's time: it moves only when told.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// paced drives a meter as a send paced at rate in 32 KiB frames whose
// limiter saved a 64 KiB burst, reading it every 5 ms of the test's time.
type paced struct {
	c     *clock
	m     *Meter
	worst int64 // the highest rate read
	rated bool  // some read gave a rate
}

const frame, rate = 32 << 10, 1e6

func newPaced() *paced {
	c := &clock{t: time.Unix(1e9, 0)}
	return &paced{c: c, m: newMeter(c.now)}
}

func (p *paced) read(d time.Duration) {
	for until := p.c.t.Add(d); p.c.t.Before(until); p.c.t = p.c.t.Add(5 * time.Millisecond) {
		r := p.m.Stats().BytesPerSecond
		p.worst, p.rated = max(p.worst, r), p.rated || r > 0
	}
}

// burst lands the frame in flight and then the limiter's 64 KiB at once.
func (p *paced) burst() {
	for range 3 {
		p.m.Add(frame)
		p.c.t = p.c.t.Add(time.Millisecond)
	}
}

func (p *paced) send(frames int) {
	for range frames {
		p.read(time.Duration(frame / rate * float64(time.Second)))
		p.m.Add(frame)
	}
}

// A paced send reads near its pace from its first report on, not as its
// burst over the first few milliseconds: that read twice a 1 MB/s cap in
// CI. Nor as the short window after a stall, which read the same.
func TestMeterRateAcrossAStall(t *testing.T) {
	p := newPaced()
	if st := p.m.Stats(); st.BytesPerSecond != 0 || st.ETA(1) != 0 {
		t.Fatalf("before any byte: %+v, want no rate and no ETA", st)
	}
	p.burst()
	p.send(100)             // 3.3 s at the pace
	p.read(3 * time.Second) // the receiver stalls
	p.burst()
	p.send(100)
	// The burst is real bytes: over the first 250 ms it adds a quarter.
	if limit := int64(rate * 1.25); p.worst > limit || !p.rated {
		t.Fatalf("a send paced at %.0f B/s read at most %d B/s (a rate read: %v)", rate, p.worst, p.rated)
	}
	st := p.m.Stats()
	if st.BytesPerSecond < int64(rate*0.9) || st.ETA(st.Bytes+rate) < 900*time.Millisecond {
		t.Fatalf("after 3 s back at the pace: %+v, ETA of 1 MB more %s", st, st.ETA(st.Bytes+rate))
	}
	p.read(time.Second)
	if r := p.m.Stats().BytesPerSecond; r > int64(rate*0.6) || r < int64(rate*0.4) {
		t.Fatalf("a second without bytes after a steady pace reads %d B/s, want half of it", r)
	}
}
