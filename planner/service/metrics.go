package service

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drovehq/drove/events/promreg"
)

// metrics are the service's collectors, named drove_planner_*.
type metrics struct {
	requests    *prometheus.CounterVec // by outcome
	jobs        *prometheus.GaugeVec   // by state
	planSeconds prometheus.Histogram
	lag         *prometheus.GaugeVec // by topic
}

// jobStates are the label values of drove_planner_jobs.
var jobStates = []string{"pending", "running", "succeeded", "failed", "cancelled"}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drove_planner_requests_total",
			Help: "Requests closed by this process, by outcome: completed, partial, cancelled, rejected.",
		}, []string{"outcome"}),
		jobs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "drove_planner_jobs",
			Help: "Jobs of every plan in the log, by state: pending, running, succeeded, failed, cancelled.",
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
	}
	if err := errors.Join(promreg.Register(reg, &m.requests), promreg.Register(reg, &m.jobs),
		promreg.Register(reg, &m.planSeconds), promreg.Register(reg, &m.lag)); err != nil {
		return nil, err
	}
	return m, nil
}

// countJobs sets the jobs gauge from the state.
func (m *metrics) countJobs(s *state) {
	counts := map[string]float64{}
	for _, id := range s.order {
		r := s.requests[id]
		if r.kind == "" || r.plan == nil {
			continue
		}
		for i := range r.plan.Jobs {
			j := r.jobs[i]
			switch {
			case j == nil || (!j.released && !j.done()):
				counts["pending"]++
			case j.running():
				counts["running"]++
			case j.status() == "success":
				counts["succeeded"]++
			case j.cancelled != "" || j.ended == "canceled":
				counts["cancelled"]++
			default:
				counts["failed"]++
			}
		}
	}
	for _, st := range jobStates {
		m.jobs.WithLabelValues(st).Set(counts[st])
	}
}
