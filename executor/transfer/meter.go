package transfer

import (
	"sync"
	"time"
)

// Meter counts bytes and derives the current rate over a sliding window,
// for progress events (current/total, bytes per second, eta).
type Meter struct {
	mu      sync.Mutex
	now     func() time.Time // time.Now; a test's clock
	start   time.Time
	bytes   int64
	samples []sample // the first Add's, or the last at or before the window's start; then all within it
}

type sample struct {
	t time.Time
	n int64 // bytes counted by then
}

// rateWindow is how far back the current rate looks: long enough to smooth
// chunk bursts, short enough to follow a rate change.
const rateWindow = 2 * time.Second

// sampleStep is the closest two kept samples are: a send adds a frame
// every 100 µs or so, and a sample for each made every Add shift a window
// of tens of thousands (6 % of a TLS move's CPU). A rate over 2 s read
// to 10 ms is within half a percent.
const sampleStep = 10 * time.Millisecond

// rateMinSpan is the shortest time a rate is measured over. Shorter, a
// limiter's saved burst (64 KiB: 65 ms at 1 MB/s) reads as twice its cap.
const rateMinSpan = 250 * time.Millisecond

// NewMeter returns a meter starting now.
func NewMeter() *Meter { return newMeter(time.Now) }

func newMeter(now func() time.Time) *Meter { return &Meter{now: now, start: now()} }

// Add counts n more bytes.
func (m *Meter) Add(n int) {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bytes += int64(n)
	if k := len(m.samples); k >= 2 && now.Sub(m.samples[k-2].t) < sampleStep {
		m.samples[k-1] = sample{now, m.bytes} // the newest moves on within a step
	} else {
		m.samples = append(m.samples, sample{now, m.bytes})
	}
	// Keep one sample at or before the window's start: it says how many
	// bytes had been counted when the window began.
	cut := 0
	for cut+1 < len(m.samples) && !m.samples[cut+1].t.After(now.Add(-rateWindow)) {
		cut++
	}
	if cut > 0 {
		m.samples = append(m.samples[:0], m.samples[cut:]...)
	}
}

// Stats is a meter's reading.
type Stats struct {
	Bytes          int64
	BytesPerSecond int64         // over the last window; 0 (unknown) in the first rateMinSpan
	Average        int64         // since start
	Elapsed        time.Duration // since start
}

// Stats reads the meter.
func (m *Meter) Stats() Stats {
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Stats{Bytes: m.bytes, Elapsed: now.Sub(m.start)}
	if sec := s.Elapsed.Seconds(); sec > 0 {
		s.Average = int64(float64(m.bytes) / sec)
	}
	s.BytesPerSecond = m.rate(now)
	return s
}

// rate is the bytes per second over the last window, or since the first
// Add if that is shorter. Over the whole window, not from the first sample
// within it: after a stall that span is short, and the burst that ends a
// stall read as twice a send's cap. The first Add's own bytes are left
// out: they came at once, with a limiter's burst behind them.
func (m *Meter) rate(now time.Time) int64 {
	if len(m.samples) == 0 {
		return 0
	}
	from := now.Add(-rateWindow)
	if first := m.samples[0].t; from.Before(first) {
		from = first // the first Add's sample: nothing was cut yet
	}
	d := now.Sub(from)
	if d < rateMinSpan {
		return 0
	}
	return int64(float64(m.bytes-m.countAt(from)) / d.Seconds())
}

// countAt is the count at time t, which is not before the first sample.
func (m *Meter) countAt(t time.Time) int64 {
	n := m.samples[0].n
	for _, s := range m.samples[1:] {
		if s.t.After(t) {
			break
		}
		n = s.n
	}
	return n
}

// ETA is the time left to reach total at the current rate; 0 when unknown
// or done.
func (s Stats) ETA(total int64) time.Duration {
	if s.BytesPerSecond <= 0 || total <= s.Bytes {
		return 0
	}
	return time.Duration(float64(total-s.Bytes) / float64(s.BytesPerSecond) * float64(time.Second))
}
