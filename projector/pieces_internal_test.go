package projector

import (
	"maps"
	"slices"
	"testing"

	"github.com/drovehq/drove/events/kafka"
)

// TestPiecesCutByBytes cuts a batch of two partitions, with control
// records after the data in one of them, and checks each piece's records
// and offsets: a piece never passes the bound unless one record does, and
// the last piece carries the batch's own next offsets.
func TestPiecesCutByBytes(t *testing.T) {
	rec := func(p int32, off int64, n int) kafka.Raw {
		return kafka.Raw{Topic: "t", Partition: p, Offset: off, Key: []byte("k"), Value: make([]byte, n-1)}
	}
	b := kafka.Batch{
		Records: []kafka.Raw{rec(0, 10, 40), rec(1, 5, 40), rec(0, 11, 30), rec(0, 12, 100), rec(1, 6, 10)},
		// Partition 0 ends in a commit marker at 13, partition 2 holds
		// only a marker.
		Next:     kafka.Positions{{Topic: "t", Partition: 0}: 14, {Topic: "t", Partition: 1}: 7, {Topic: "t", Partition: 2}: 4},
		CaughtUp: true,
	}
	got := pieces(b, 80)
	type want struct {
		offsets []int64
		next    kafka.Positions
	}
	wants := []want{
		{[]int64{10, 5}, kafka.Positions{{Topic: "t", Partition: 0}: 11, {Topic: "t", Partition: 1}: 6}},
		{[]int64{11}, kafka.Positions{{Topic: "t", Partition: 0}: 12}},
		{[]int64{12}, kafka.Positions{{Topic: "t", Partition: 0}: 13}}, // larger than the bound: alone
		{[]int64{6}, b.Next},
	}
	if len(got) != len(wants) {
		t.Fatalf("%d pieces, want %d: %+v", len(got), len(wants), got)
	}
	for i, w := range wants {
		var offs []int64
		for _, r := range got[i].Records {
			offs = append(offs, r.Offset)
		}
		if !slices.Equal(offs, w.offsets) || !maps.Equal(got[i].Next, w.next) {
			t.Errorf("piece %d: offsets %v next %v, want %v next %v", i, offs, got[i].Next, w.offsets, w.next)
		}
		if last := i == len(wants)-1; got[i].CaughtUp != last {
			t.Errorf("piece %d: caught up %v", i, got[i].CaughtUp)
		}
	}
	if one := pieces(b, 1<<20); len(one) != 1 || !maps.Equal(one[0].Next, b.Next) || len(one[0].Records) != 5 {
		t.Errorf("a batch under the bound cut into %+v", one)
	}
	empty := kafka.Batch{Next: kafka.Positions{{Topic: "t", Partition: 2}: 4}}
	if p := pieces(empty, 1); len(p) != 1 || !maps.Equal(p[0].Next, empty.Next) {
		t.Errorf("a batch of control records cut into %+v", p)
	}
}
