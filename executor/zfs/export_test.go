package zfs

import "context"

// BeforeTargetSum sets a hook the target runs before it sums a move's
// snapshot n, read in directory root (prev as the source asked): fault
// tests damage the target's copy there, after the final delta and before
// the switch's checksum.
func (d *Driver) BeforeTargetSum(f func(ctx context.Context, root string, n, prev int)) {
	d.beforeTargetSum.Store(&f)
}
