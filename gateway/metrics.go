package gateway

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drovehq/drove/events/promreg"
)

// metrics are the gateway's collectors, all named drove_gateway_*.
type metrics struct {
	requests    *prometheus.CounterVec   // by route, method, status
	duration    *prometheus.HistogramVec // by route, method
	watches     prometheus.Gauge         // watch streams open now
	watchCut    prometheus.Counter       // watchers cut off for falling behind
	appended    *prometheus.CounterVec   // events appended, by type
	tailerPolls prometheus.Counter       // event_log polls of the shared tailer
	denied      *prometheus.CounterVec   // refused callers, by code (unauthorized, forbidden)
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drove_gateway_http_requests_total",
			Help: "HTTP requests answered, by route template, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "drove_gateway_http_request_duration_seconds",
			Help:    "Time to answer an HTTP request (watch streams: until they end), by route template and method.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "method"}),
		watches: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "drove_gateway_watch_streams_open",
			Help: "Watch streams open now.",
		}),
		watchCut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drove_gateway_watch_streams_cut_total",
			Help: "Watch streams ended because the watcher fell too far behind.",
		}),
		appended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drove_gateway_events_appended_total",
			Help: "Events the gateway appended to the log, by type.",
		}, []string{"type"}),
		tailerPolls: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drove_gateway_tailer_polls_total",
			Help: "Polls of event_log by the shared watch tailer.",
		}),
		denied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drove_gateway_denied_total",
			Help: "Callers refused (and audited), by code: unauthorized (401) or forbidden (403).",
		}, []string{"code"}),
	}
	if err := errors.Join(promreg.Register(reg, &m.requests), promreg.Register(reg, &m.duration),
		promreg.Register(reg, &m.watches), promreg.Register(reg, &m.watchCut), promreg.Register(reg, &m.appended),
		promreg.Register(reg, &m.tailerPolls), promreg.Register(reg, &m.denied)); err != nil {
		return nil, fmt.Errorf("%w: Metrics: %w", ErrInvalidConfig, err)
	}
	return m, nil
}
