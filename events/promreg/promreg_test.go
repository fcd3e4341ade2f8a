package promreg

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestASecondRegistrationSharesTheFirst(t *testing.T) {
	reg := prometheus.NewRegistry()
	first := prometheus.NewCounter(prometheus.CounterOpts{Name: "drove_test_total", Help: "h"})
	if err := Register(reg, &first); err != nil {
		t.Fatal(err)
	}
	second := prometheus.NewCounter(prometheus.CounterOpts{Name: "drove_test_total", Help: "h"})
	if err := Register(reg, &second); err != nil {
		t.Fatalf("second registration: %v", err)
	}
	second.Inc()
	if got := testutil.ToFloat64(first); got != 1 {
		t.Fatalf("the first collector counts %v after the second counted once, want 1", got)
	}
	clash := prometheus.NewGauge(prometheus.GaugeOpts{Name: "drove_test_total", Help: "other"})
	if err := Register(reg, &clash); err == nil {
		t.Fatal("a collector of another shape under a taken name registered")
	}
}
