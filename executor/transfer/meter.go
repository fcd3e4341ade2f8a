package transfer

import (
	"sync"
	"time"
)

// Meter counts bytes and derives the current rate over a sliding window,
// for progress events (current/total, bytes per second, eta).
type Meter struct {
	mu      sync.Mutex
	start   time.Time
	bytes   int64
	samples []sample // (time, bytes) within the last window
}

type sample struct {
	t time.Time
	n int64
}

// rateWindow is how far back the current rate looks: long enough to smooth
// chunk bursts, short enough to follow a rate change.
const rateWindow = 2 * time.Second

// NewMeter returns a meter starting now.
func NewMeter() *Meter { return &Meter{start: time.Now()} }

// Add counts n more bytes.
func (m *Meter) Add(n int) {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.bytes += int64(n)
	m.samples = append(m.samples, sample{now, m.bytes})
	cut := 0
	for cut < len(m.samples)-1 && now.Sub(m.samples[cut].t) > rateWindow {
		cut++
	}
	if cut > 0 {
		m.samples = append(m.samples[:0], m.samples[cut:]...)
	}
}

// Stats is a meter's reading.
type Stats struct {
	Bytes          int64
	BytesPerSecond int64         // over the last window (average since start if shorter)
	Average        int64         // since start
	Elapsed        time.Duration // since start
}

// Stats reads the meter.
func (m *Meter) Stats() Stats {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Stats{Bytes: m.bytes, Elapsed: now.Sub(m.start)}
	if sec := s.Elapsed.Seconds(); sec > 0 {
		s.Average = int64(float64(m.bytes) / sec)
	}
	s.BytesPerSecond = s.Average
	// Past the first window, the rate is what came in over the last one;
	// before, the average since start is the best guess.
	if s.Elapsed > rateWindow && len(m.samples) > 0 {
		base := m.samples[0]
		if d := now.Sub(base.t).Seconds(); d > 0.05 {
			s.BytesPerSecond = int64(float64(m.bytes-base.n) / d)
		}
	}
	return s
}

// ETA is the time left to reach total at the current rate; 0 when unknown
// or done.
func (s Stats) ETA(total int64) time.Duration {
	if s.BytesPerSecond <= 0 || total <= s.Bytes {
		return 0
	}
	return time.Duration(float64(total-s.Bytes) / float64(s.BytesPerSecond) * float64(time.Second))
}
