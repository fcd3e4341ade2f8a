package promreg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestASecondRegistrationSharesTheFirst(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	first := prometheus.NewCounter(prometheus.CounterOpts{Name: "drove_test_total", Help: "h"})
	if err := register(reg, &first); err != nil {
		t.Fatal(err)
	}
	second := prometheus.NewCounter(prometheus.CounterOpts{Name: "drove_test_total", Help: "h"})
	if err := register(reg, &second); err != nil {
		t.Fatalf("second registration: %v", err)
	}
	second.Inc()
	if got := testutil.ToFloat64(first); got != 1 {
		t.Fatalf("the first collector counts %v after the second counted once, want 1", got)
	}
	clash := prometheus.NewGauge(prometheus.GaugeOpts{Name: "drove_test_total", Help: "other"})
	if err := register(reg, &clash); err == nil {
		t.Fatal("a collector of another shape under a taken name registered")
	}
}

// A Set registers what it makes; a second Set on the same registry (a
// restarted service) counts into the first's collectors; a clash is
// reported once, by Err.
func TestSetRegistersWhatItMakes(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	s := On(reg)
	c := s.CounterVec("drove_test_ended_total", "h", "status")
	g := s.Gauge("drove_test_running", "h")
	h := s.Histogram("drove_test_seconds", "h", prometheus.ExponentialBuckets(1, 2, 3))
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	again := On(reg)
	c2 := again.CounterVec("drove_test_ended_total", "h", "status")
	if err := again.Err(); err != nil {
		t.Fatalf("a second Set: %v", err)
	}
	c2.WithLabelValues("success").Inc()
	g.Set(2)
	h.Observe(3)
	if got := testutil.ToFloat64(c.WithLabelValues("success")); got != 1 {
		t.Errorf("the first counter reads %v after the second counted once, want 1", got)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 3 {
		t.Errorf("gathered %d series (%v), want 3", n, err)
	}
	clash := On(reg)
	clash.Gauge("drove_test_ended_total", "other")
	if clash.Err() == nil {
		t.Error("a gauge under a counter's name registered")
	}
	if On(nil).Counter("drove_test_total", "h") == nil {
		t.Error("a Set without a registry made no counter")
	}
}
