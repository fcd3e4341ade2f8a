package service

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drovehq/drove/events/promreg"
	"github.com/drovehq/drove/planner/jobs"
)

// metrics are the service's collectors, named drove_planner_*.
type metrics struct {
	requests    *prometheus.CounterVec // by outcome
	jobs        *prometheus.GaugeVec   // by state
	planSeconds prometheus.Histogram
	lag         *prometheus.GaugeVec // by topic
	position    *prometheus.GaugeVec // by topic
	snapshots   prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drove_planner_requests_total",
			Help: "Requests closed by this process, by outcome: completed, partial, cancelled, rejected.",
		}, []string{"outcome"}),
		jobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "drove_planner_jobs",
			Help: "Jobs of the active requests' plans, by state: pending, running, succeeded, failed, cancelled.",
		}, []string{"state"}),
		planSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "drove_planner_plan_compute_seconds",
			Help:    "Time planner.Compute took per plan.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "drove_planner_consumer_lag",
			Help: "Committed records not yet read, per topic, as of the last fetch.",
		}, []string{"topic"}),
		position: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "drove_planner_read_position",
			Help: "Per topic, the offsets up to which the state folds the log (the next to read), summed over partitions: unlike the lag it never reads low while a long pass keeps the service from fetching.",
		}, []string{"topic"}),
		snapshots: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drove_planner_snapshots_total",
			Help: "Snapshots of the service's state written by this process.",
		}),
	}
	if err := errors.Join(promreg.Register(reg, &m.requests), promreg.Register(reg, &m.jobs),
		promreg.Register(reg, &m.planSeconds), promreg.Register(reg, &m.lag),
		promreg.Register(reg, &m.position), promreg.Register(reg, &m.snapshots)); err != nil {
		return nil, err
	}
	return m, nil
}

// countJobs sets the jobs gauge from the fold of requests.
func (m *metrics) countJobs(s *jobs.State) {
	counts := s.CountJobs()
	for _, st := range jobs.JobStates {
		m.jobs.WithLabelValues(st).Set(counts[st])
	}
}
