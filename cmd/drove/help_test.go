package main

import (
	"strings"
	"testing"
)

// TestEveryCommandAnswersHelp: each command's flags are declared once (a
// flag named twice panics when the command starts) and --help prints its
// usage.
func TestEveryCommandAnswersHelp(t *testing.T) {
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(t, "", c.name, "--help")
			if (code != exitOK && code != exitUsage) || !strings.Contains(out+errs, "Usage") {
				t.Fatalf("drove %s --help: exit %d\n%s%s", c.name, code, out, errs)
			}
		})
	}
}
