package main

import (
	"io"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{9, 1, 5}, 5}, {[]float64{4, 1, 3, 2}, 2.5}} {
		if got := median(tc.xs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
}

// The takeover figure must hold a session timeout under 15 s.
func TestFlagsRefuseALongElectionTimeout(t *testing.T) {
	_, err := parseFlags([]string{"-election-timeout", "20s"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "under 15s") {
		t.Fatalf("err = %v", err)
	}
	cfg, err := parseFlags([]string{"-quick"}, io.Discard)
	if err != nil || cfg.events != 10_000 || cfg.requests != 3 {
		t.Fatalf("-quick: %+v, %v", cfg, err)
	}
}
