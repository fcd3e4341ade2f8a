package main

import (
	"testing"

	"github.com/drovehq/drove/test/testenv"
)

// TestMain stops the Kafka broker (and Postgres) the tests shared when
// KAFKA_BROKERS did not name one, and removes their directory: without it
// each run left a broker's directory in the temp dir for the next to sweep.
func TestMain(m *testing.M) { testenv.Main(m) }
