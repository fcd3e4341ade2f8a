package zfs

import "context"

// BeforeTargetSum sets a hook the target runs before it sums a move's
// snapshot n of dataset ds (prev as the source asked): fault tests damage
// the target's copy there, after the final delta and before the switch.
func (d *Driver) BeforeTargetSum(f func(ctx context.Context, ds string, n, prev int)) {
	d.beforeTargetSum.Store(&f)
}
