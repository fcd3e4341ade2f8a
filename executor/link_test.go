package executor_test

import (
	"context"
	"errors"
	"testing"

	"github.com/drovehq/drove/events/kafka"
	"github.com/drovehq/drove/executor"
	"github.com/drovehq/drove/executor/nodeid"
)

// networked is a driver with a target side: its moves cross the network.
type networked struct{}

func (networked) Run(context.Context, executor.Op, func(executor.Progress)) (executor.Result, error) {
	return executor.Result{}, nil
}

func (networked) Receive(context.Context, executor.Op, func(string), func(executor.Progress)) error {
	return nil
}

// TestPlainTransferOnlyWhenAsked: an executor whose driver sends instances
// between nodes needs its node's identity, or PlainTransfer said out loud;
// an identity naming another node is refused.
func TestPlainTransferOnlyWhenAsked(t *testing.T) {
	ids, err := nodeid.Bundle(t.TempDir(), "n1", "n2")
	if err != nil {
		t.Fatal(err)
	}
	k := kafka.Config{Brokers: []string{"127.0.0.1:1"}}
	for _, tc := range []struct {
		name string
		cfg  executor.Config
		ok   bool
	}{
		{"neither identity nor plain", executor.Config{Node: "n1", Kafka: k}, false},
		{"another node's identity", executor.Config{Node: "n1", Kafka: k, Transfer: ids["n2"]}, false},
		{"its identity", executor.Config{Node: "n1", Kafka: k, Transfer: ids["n1"]}, true},
		{"plain, explicitly", executor.Config{Node: "n1", Kafka: k, PlainTransfer: true}, true},
	} {
		e, err := executor.New(tc.cfg, networked{})
		if tc.ok != (err == nil) || (err != nil && !errors.Is(err, executor.ErrInvalidConfig)) {
			t.Errorf("%s: %v; want ok=%v", tc.name, err, tc.ok)
		}
		_ = e
	}
}
