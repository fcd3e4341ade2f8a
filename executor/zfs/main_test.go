package zfs_test

import (
	"testing"

	"github.com/drovehq/drove/test/testenv"
)

// TestMain removes the drove binary TestSourceExecutorKilledDuringASync
// built (testenv.Drove).
func TestMain(m *testing.M) { testenv.Main(m) }
