package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Set makes a service's collectors and registers each on one registry as
// it is made, with register's rule for one registered before, so a
// service declares a metric in one line and checks one error (Err) for
// all of them:
//
//	s := promreg.On(reg)
//	m := &metrics{ended: s.CounterVec("drove_x_ended_total", "Xs ended, by status.", "status")}
//	if err := s.Err(); err != nil { ... }
type Set struct {
	reg  prometheus.Registerer
	errs []error
}

// On returns a Set that registers on reg; a nil reg is a registry of the
// Set's own (the metrics count but nothing exports them).
func On(reg prometheus.Registerer) *Set {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	return &Set{reg: reg}
}

// Err is every registration that failed, joined; nil when all took.
func (s *Set) Err() error { return errors.Join(s.errs...) }

// add registers c and returns the collector to use: c, or the one of the
// same type already registered under its name.
func add[C prometheus.Collector](s *Set, c C) C {
	if err := register(s.reg, &c); err != nil {
		s.errs = append(s.errs, err)
	}
	return c
}

// Counter is a counter named name.
func (s *Set) Counter(name, help string) prometheus.Counter {
	return add(s, prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help}))
}

// CounterVec is a counter named name, by labels.
func (s *Set) CounterVec(name, help string, labels ...string) *prometheus.CounterVec {
	return add(s, prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels))
}

// Gauge is a gauge named name.
func (s *Set) Gauge(name, help string) prometheus.Gauge {
	return add(s, prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help}))
}

// GaugeVec is a gauge named name, by labels.
func (s *Set) GaugeVec(name, help string, labels ...string) *prometheus.GaugeVec {
	return add(s, prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels))
}

// Histogram is a histogram named name over buckets (nil: Prometheus's
// default buckets).
func (s *Set) Histogram(name, help string, buckets []float64) prometheus.Histogram {
	return add(s, prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}))
}

// HistogramVec is a histogram named name over buckets, by labels.
func (s *Set) HistogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	return add(s, prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels))
}
