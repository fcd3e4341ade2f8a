package projector

import (
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drovehq/drove/events/promreg"
)

// metrics are the projector's Prometheus collectors.
type metrics struct {
	applied     *prometheus.CounterVec // events whose effect was applied, by type
	duplicates  *prometheus.CounterVec // events already in event_log, by type
	undecodable *prometheus.CounterVec // records set aside, by topic
	lag         *prometheus.GaugeVec   // end offset - next_offset, by topic and partition
	apply       prometheus.Histogram   // seconds per folded batch (one transaction)
	batch       prometheus.Histogram   // records per folded batch
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &metrics{
		applied: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drove_projector_events_applied_total",
			Help: "Events folded into the views, by event type (duplicates excluded).",
		}, []string{"type"}),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drove_projector_duplicate_events_total",
			Help: "Events skipped because their id was already in event_log, by event type.",
		}, []string{"type"}),
		undecodable: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drove_projector_undecodable_events_total",
			Help: "Records that could not be folded and were set aside in undecodable_events, by topic.",
		}, []string{"topic"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "drove_projector_lag",
			Help: "Records between the log's end (last stable offset) and the projector's next offset.",
		}, []string{"topic", "partition"}),
		apply: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "drove_projector_apply_seconds",
			Help:    "Time to fold one batch of records in one Postgres transaction.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "drove_projector_batch_records",
			Help:    "Records folded per transaction.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11),
		}),
	}
	if err := errors.Join(promreg.Register(reg, &m.applied), promreg.Register(reg, &m.duplicates),
		promreg.Register(reg, &m.undecodable), promreg.Register(reg, &m.lag),
		promreg.Register(reg, &m.apply), promreg.Register(reg, &m.batch)); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) setLag(topic string, partition int32, lag int64) {
	m.lag.WithLabelValues(topic, strconv.Itoa(int(partition))).Set(float64(max(lag, 0)))
}
