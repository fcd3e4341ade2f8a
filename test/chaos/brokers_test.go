package chaos

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/gateway/wire"
	"github.com/drovehq/drove/test/testenv"
)

// brokerStart bounds a start (or restart) of the three brokers: seconds
// on a quiet machine, yet past 2 minutes when all three restart at once
// beside a load average of 50.
const brokerStart = 4 * time.Minute

// startKafka starts a cluster of three Apache Kafka brokers for the test,
// each also a controller.
func (s *system) startKafka() {
	ctx, cancel := context.WithTimeout(context.Background(), brokerStart+time.Minute)
	defer cancel()
	c, err := apachekafka.Start(ctx, apachekafka.Options{Dir: filepath.Join(s.Dir, "kafka"), Nodes: 3, StartTimeout: brokerStart,
		Settings: testenv.BrokerSettings})
	if err != nil {
		s.T.Fatal(err)
	}
	s.T.Cleanup(func() { _ = c.Kill() })
	s.Kafka = c
	s.Brokers = strings.Join(c.Brokers(), ",")
}

// killBusiestLeader kills with SIGKILL the broker leading the partition
// that holds the most events: the one whose loss costs the most
// leadership changes under load.
func (s *system) killBusiestLeader() {
	busiest, held, leader := s.BusiestPartition()
	s.T.Logf("SIGKILL broker %d, the leader of %s (%d events)", leader, busiest, held)
	n := s.Kafka.Node(leader)
	if n == nil {
		s.T.Fatalf("broker %d, the leader of %s, is not one of the test's", leader, busiest)
	}
	if err := n.Kill(); err != nil {
		s.T.Fatal(err)
	}
}

// killAllBrokers kills all three brokers with SIGKILL. While none runs the
// API still answers reads (from the views), and a write is refused with
// 503: none is acknowledged.
func (s *system) killAllBrokers() {
	s.T.Log("SIGKILL all three brokers")
	if err := s.Kafka.Kill(); err != nil {
		s.T.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var list struct {
		Items []json `json:"items"`
	}
	if err := s.api.Get(ctx, "/v1/nodes", &list); err != nil {
		s.T.Errorf("reading the nodes with every broker down: %v", err)
	}
	_, err := s.api.Evacuate(ctx, wire.Evacuation{Nodes: []string{"node-g1-002"}, Mode: "all", Reason: "chaos: no broker"})
	var ae *wire.Error
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable:
		s.T.Logf("with every broker down an evacuation is refused: %v", err)
	case err == nil:
		s.T.Errorf("with every broker down an evacuation was acknowledged")
	default:
		s.T.Errorf("with every broker down an evacuation got %v, want a 503", err)
	}
}

// restartBrokers starts every broker that is not running.
func (s *system) restartBrokers() {
	ctx, cancel := context.WithTimeout(context.Background(), brokerStart+time.Minute)
	defer cancel()
	t0 := time.Now()
	if err := s.Kafka.Start(ctx); err != nil {
		s.T.Fatal(err)
	}
	s.T.Logf("brokers listed again %s after their start", time.Since(t0).Round(time.Millisecond))
}
