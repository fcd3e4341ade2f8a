package qemu

import (
	"testing"
	"time"
)

// A live switch's downtime limit is the configured one, lowered to the
// migration's downtime budget when that is tighter, never to 0 (QEMU
// then skips its bitmap sync and completes at once).
func TestSwitchLimitHoldsToTheBudget(t *testing.T) {
	for _, c := range []struct{ configured, budget, want time.Duration }{
		{300 * time.Millisecond, 0, 300 * time.Millisecond},
		{300 * time.Millisecond, time.Second, 300 * time.Millisecond},
		{300 * time.Millisecond, 120 * time.Millisecond, 120 * time.Millisecond},
		{300 * time.Millisecond, time.Microsecond, time.Millisecond},
	} {
		if got := switchLimit(c.configured, c.budget); got != c.want {
			t.Errorf("switchLimit(%s, %s) = %s, want %s", c.configured, c.budget, got, c.want)
		}
	}
}
