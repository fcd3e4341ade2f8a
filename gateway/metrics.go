package gateway

import (
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
	s := promreg.On(reg)
	m := &metrics{
		requests: s.CounterVec("drove_gateway_http_requests_total",
			"HTTP requests answered, by route template, method and status.", "route", "method", "status"),
		duration: s.HistogramVec("drove_gateway_http_request_duration_seconds",
			"Time to answer an HTTP request (watch streams: until they end), by route template and method.",
			prometheus.DefBuckets, "route", "method"),
		watches:     s.Gauge("drove_gateway_watch_streams_open", "Watch streams open now."),
		watchCut:    s.Counter("drove_gateway_watch_streams_cut_total", "Watch streams ended because the watcher fell too far behind."),
		appended:    s.CounterVec("drove_gateway_events_appended_total", "Events the gateway appended to the log, by type.", "type"),
		tailerPolls: s.Counter("drove_gateway_tailer_polls_total", "Polls of event_log by the shared watch tailer."),
		denied: s.CounterVec("drove_gateway_denied_total",
			"Callers refused (and audited), by code: unauthorized (401) or forbidden (403).", "code"),
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("%w: Metrics: %w", ErrInvalidConfig, err)
	}
	return m, nil
}
