package hailsuite

import (
	"testing"

	"github.com/drovehq/drove/test/testenv"
)

// TestMain stops what testenv started for these tests and removes the
// drove binary it built.
func TestMain(m *testing.M) { testenv.Main(m) }
