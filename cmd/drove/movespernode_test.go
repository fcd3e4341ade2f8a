package main

import "testing"

// --max-moves-per-node takes a number of at least 1, or auto.
func TestMovesPerNodeFlag(t *testing.T) {
	var m movesPerNode
	if err := m.Set("auto"); err != nil || !m.auto || m.String() != "auto" {
		t.Fatalf("auto: %v, %+v", err, m)
	}
	if err := m.Set("3"); err != nil || m.auto || m.n != 3 || m.String() != "3" {
		t.Fatalf("3: %v, %+v", err, m)
	}
	for _, bad := range []string{"0", "-1", "many"} {
		if err := m.Set(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
