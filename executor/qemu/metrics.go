package qemu

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/drovehq/drove/events/promreg"
)

type metrics struct {
	vms        prometheus.Gauge
	migrations *prometheus.CounterVec
	downtime   prometheus.Histogram
	postcopy   prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		vms: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "drove_qemu_vms", Help: "VMs this driver runs on its node."}),
		migrations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drove_qemu_migrations_total", Help: "Live migrations sent, by outcome."}, []string{"outcome"}),
		downtime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "drove_qemu_migration_downtime_seconds", Help: "Downtime QEMU measured for each completed migration.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14)}),
		postcopy: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "drove_qemu_postcopy_switches_total", Help: "Migrations switched to post-copy."}),
	}
	if err := errors.Join(promreg.Register(reg, &m.vms), promreg.Register(reg, &m.migrations),
		promreg.Register(reg, &m.downtime), promreg.Register(reg, &m.postcopy)); err != nil {
		return nil, fmt.Errorf("qemu: metrics: %w", err)
	}
	return m, nil
}
