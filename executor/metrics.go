package executor

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/drovehq/drove/events/promreg"
)

// metrics are the executor's drove_executor_* series. One executor runs per
// node, so no node label: the scrape target says which node it is.
type metrics struct {
	started    *prometheus.CounterVec
	ended      *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	retries    *prometheus.CounterVec
	running    prometheus.Gauge
	queued     prometheus.Gauge
	progress   prometheus.Counter
	duplicates prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	s := promreg.On(reg)
	m := &metrics{
		started: s.CounterVec("drove_executor_opcodes_started_total", "Opcodes this executor started, by kind.", "kind"),
		ended: s.CounterVec("drove_executor_opcodes_ended_total",
			"Opcodes this executor ended, by kind and status (success, error, canceled).", "kind", "status"),
		duration: s.HistogramVec("drove_executor_opcode_duration_seconds",
			"Time from an opcode's start to its end, retries included.",
			prometheus.ExponentialBuckets(0.1, 2, 16), "kind", "status"),
		retries: s.CounterVec("drove_executor_retries_total", "Driver attempts retried after a transient fault, by kind.", "kind"),
		running: s.Gauge("drove_executor_opcodes_running", "Opcodes running in a driver now."),
		queued: s.Gauge("drove_executor_opcodes_queued",
			"Opcodes dispatched to this node waiting for a free slot (Concurrency)."),
		progress: s.Counter("drove_executor_progress_events_total", "Progress events appended to drove.progress."),
		duplicates: s.Counter("drove_executor_duplicate_dispatches_total",
			"Dispatches ignored because the opcode already ran or is running (redelivery)."),
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	return m, nil
}
