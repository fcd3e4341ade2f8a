package service

import (
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
	s := promreg.On(reg)
	m := &metrics{
		requests: s.CounterVec("drove_planner_requests_total",
			"Requests closed by this process, by outcome: completed, partial, cancelled, rejected.", "outcome"),
		jobs: s.GaugeVec("drove_planner_jobs",
			"Jobs of the active requests' plans, by state: pending, running, succeeded, failed, cancelled.", "state"),
		planSeconds: s.Histogram("drove_planner_plan_compute_seconds", "Time planner.Compute took per plan.",
			prometheus.ExponentialBuckets(0.0005, 4, 10)),
		lag: s.GaugeVec("drove_planner_consumer_lag", "Committed records not yet read, per topic, as of the last fetch.", "topic"),
		position: s.GaugeVec("drove_planner_read_position",
			"Per topic, the offsets up to which the state folds the log (the next to read), summed over partitions: unlike the lag it never reads low while a long pass keeps the service from fetching.",
			"topic"),
		snapshots: s.Counter("drove_planner_snapshots_total", "Snapshots of the service's state written by this process."),
	}
	if err := s.Err(); err != nil {
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
