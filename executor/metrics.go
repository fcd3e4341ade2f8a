package executor

import (
	"errors"

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
	m := &metrics{
		started: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drove_executor_opcodes_started_total",
			Help: "Opcodes this executor started, by kind.",
		}, []string{"kind"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drove_executor_opcodes_ended_total",
			Help: "Opcodes this executor ended, by kind and status (success, error, canceled).",
		}, []string{"kind", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "drove_executor_opcode_duration_seconds",
			Help:    "Time from an opcode's start to its end, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.1, 2, 16),
		}, []string{"kind", "status"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drove_executor_retries_total",
			Help: "Driver attempts retried after a transient fault, by kind.",
		}, []string{"kind"}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "drove_executor_opcodes_running",
			Help: "Opcodes running in a driver now.",
		}),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "drove_executor_opcodes_queued",
			Help: "Opcodes dispatched to this node waiting for a free slot (Concurrency).",
		}),
		progress: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drove_executor_progress_events_total",
			Help: "Progress events appended to drove.progress.",
		}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drove_executor_duplicate_dispatches_total",
			Help: "Dispatches ignored because the opcode already ran or is running (redelivery).",
		}),
	}
	if err := errors.Join(promreg.Register(reg, &m.started), promreg.Register(reg, &m.ended),
		promreg.Register(reg, &m.duration), promreg.Register(reg, &m.retries), promreg.Register(reg, &m.running),
		promreg.Register(reg, &m.queued), promreg.Register(reg, &m.progress), promreg.Register(reg, &m.duplicates)); err != nil {
		return nil, err
	}
	return m, nil
}
