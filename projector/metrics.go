package projector

import (
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
	s := promreg.On(reg)
	m := &metrics{
		applied: s.CounterVec("drove_projector_events_applied_total",
			"Events folded into the views, by event type (duplicates excluded).", "type"),
		duplicates: s.CounterVec("drove_projector_duplicate_events_total",
			"Events skipped because their id was already in event_log, by event type.", "type"),
		undecodable: s.CounterVec("drove_projector_undecodable_events_total",
			"Records that could not be folded and were set aside in undecodable_events, by topic.", "topic"),
		lag: s.GaugeVec("drove_projector_lag",
			"Records between the log's end (last stable offset) and the projector's next offset.", "topic", "partition"),
		apply: s.Histogram("drove_projector_apply_seconds",
			"Time to fold one batch of records in one Postgres transaction.", prometheus.ExponentialBuckets(0.001, 2, 14)),
		batch: s.Histogram("drove_projector_batch_records", "Records folded per transaction.",
			prometheus.ExponentialBuckets(1, 2, 11)),
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *metrics) setLag(topic string, partition int32, lag int64) {
	m.lag.WithLabelValues(topic, strconv.Itoa(int(partition))).Set(float64(max(lag, 0)))
}
