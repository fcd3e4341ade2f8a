package main

import (
	"io"
	"strings"
	"testing"
)

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
