package main

import (
	"strings"
	"testing"
)

func TestDevRefusesAnUnknownDriver(t *testing.T) {
	code, out, errs := run(t, "", "dev", "--driver", "teleport", "--dir", t.TempDir())
	if code != 1 || out != "" || !strings.Contains(errs, `unknown --driver "teleport": sim or zfs`) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
