package qemu

import (
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
	s := promreg.On(reg)
	m := &metrics{
		vms:        s.Gauge("drove_qemu_vms", "VMs this driver runs on its node."),
		migrations: s.CounterVec("drove_qemu_migrations_total", "Live migrations sent, by outcome.", "outcome"),
		downtime: s.Histogram("drove_qemu_migration_downtime_seconds", "Downtime QEMU measured for each completed migration.",
			prometheus.ExponentialBuckets(0.001, 2, 14)),
		postcopy: s.Counter("drove_qemu_postcopy_switches_total", "Migrations switched to post-copy."),
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("qemu: metrics: %w", err)
	}
	return m, nil
}
