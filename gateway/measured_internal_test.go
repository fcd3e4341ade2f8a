package gateway

import "testing"

// A median of an even count is the mean of its two middle values, so
// two switches measured predict between them, not the slower one.
func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []int64
		want int64
	}{
		{[]int64{7}, 7},
		{[]int64{183, 126}, 154},
		{[]int64{900, 300, 400}, 400},
		{[]int64{4, 1, 3, 2}, 2},
	} {
		if got := median(c.xs); got != c.want {
			t.Errorf("median(%v) = %d, want %d", c.xs, got, c.want)
		}
	}
	xs := []int64{3, 1, 2}
	if median(xs); xs[0] != 3 {
		t.Errorf("median reordered its argument: %v", xs)
	}
}
