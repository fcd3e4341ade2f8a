package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/drovehq/drove/deploy/apachekafka"
	"github.com/drovehq/drove/deploy/embedded"
)

// The brokers drove dev runs on (--kafka).
const (
	kafkaEmbedded = "embedded"
	kafkaApache   = "apache"
)

// Each broker keeps its data in a directory of its own under --dir: a log
// of one is no log of the other, and Postgres's views and the planner's
// snapshot hold positions in it.
var devKafkaDirs = map[string]string{kafkaEmbedded: "kafka", kafkaApache: "apachekafka"}

// devBroker is the broker drove dev started.
type devBroker struct {
	brokers []string
	// about is the line that says which broker it is and where.
	about string
	stop  func()
}

// startDevBroker starts the broker --kafka names, its data under abs.
func (f devFlags) startDevBroker(ctx context.Context, abs string) (*devBroker, error) {
	dir, ok := devKafkaDirs[f.kafka]
	if !ok {
		return nil, fmt.Errorf("unknown --kafka %q: embedded or apache", f.kafka)
	}
	for other, odir := range devKafkaDirs {
		if other == f.kafka {
			continue
		}
		// The views in Postgres were folded from the other broker's log.
		if _, err := os.Stat(filepath.Join(abs, odir)); err == nil {
			return nil, fmt.Errorf("%s holds a log of the %s broker (%s); run --kafka %s on another --dir", abs, other, odir, f.kafka)
		}
	}
	dir = filepath.Join(abs, dir)
	if f.kafka == kafkaApache {
		return startApacheDev(ctx, dir)
	}
	b, err := embedded.StartBroker(embedded.Broker{Dir: dir, Addr: f.brokerAddr, Partitions: f.partitions})
	if err != nil {
		return nil, err
	}
	return &devBroker{brokers: b.Addrs(), stop: b.Stop,
		about: fmt.Sprintf("Kafka: embedded (franz-go kfake) at %s (deploy/embedded, data in %s)", strings.Join(b.Addrs(), ","), dir)}, nil
}

// startApacheDev starts one Apache Kafka broker (and controller) on dir;
// cluster.json there keeps its id and port, so a restart is the same
// broker with the same log.
func startApacheDev(ctx context.Context, dir string) (*devBroker, error) {
	c, err := apachekafka.Start(ctx, apachekafka.Options{Dir: dir, Nodes: 1})
	if errors.Is(err, apachekafka.ErrNotInstalled) {
		return nil, fmt.Errorf("--kafka apache needs Java 17+ and Apache Kafka's jars; run `make test-deps` (or `make run-kafka`, which does): %w", err)
	}
	if err != nil {
		return nil, err
	}
	stop := func() {
		// A clean stop lets the next start skip recovering the log.
		_ = c.Stop(30 * time.Second)
	}
	return &devBroker{brokers: c.Brokers(), stop: stop,
		about: fmt.Sprintf("Kafka: Apache Kafka %s at %s (deploy/apachekafka, data in %s)",
			apachekafka.Version, strings.Join(c.Brokers(), ","), dir)}, nil
}
