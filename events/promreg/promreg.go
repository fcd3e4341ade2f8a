// Package promreg is how every Drove service registers its Prometheus
// collectors: one rule for a collector registered twice on the same
// registry (a service restarted within one process — a test, a supervisor
// loop, `drove dev` — or two of a kind sharing a registry). The second
// registration takes over the collector registered first, so both count
// into the one exported series instead of failing or hiding it.
//
// Services make their collectors through a Set (On), which registers each
// as it is made, the one way; register is the rule under it.
//
// It sits beside events because every service already depends on events;
// it imports only Prometheus's client.
package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// register registers *c on reg. If a collector of the same type is already
// registered under its name, *c is replaced by that one; any other failure
// (a name taken by a collector of another shape) is returned.
func register[C prometheus.Collector](reg prometheus.Registerer, c *C) error {
	err := reg.Register(*c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if old, ok := are.ExistingCollector.(C); ok {
			*c = old
			return nil
		}
	}
	return err
}
