package embedded

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Broker describes the embedded Kafka: franz-go's kfake, a Kafka
// wire-protocol cluster in this process, persisted in a directory. Every
// Drove component talks to it through the Kafka protocol, exactly as to
// Apache Kafka in production.
type Broker struct {
	Dir        string // data directory; state survives restarts
	Addr       string // host:port to listen on; "" picks 127.0.0.1 and a free port
	Partitions int    // per auto-created topic; 0 means 3
	Logger     *slog.Logger
}

// BrokerServer is a running embedded broker.
type BrokerServer struct {
	cluster *kfake.Cluster
}

// StartBroker starts the broker, reloading the state kept in Dir.
func StartBroker(cfg Broker) (*BrokerServer, error) {
	partitions := cfg.Partitions
	if partitions <= 0 {
		partitions = 3
	}
	port, host := 0, ""
	if cfg.Addr != "" {
		h, p, err := net.SplitHostPort(cfg.Addr)
		host = h
		if err != nil {
			return nil, fmt.Errorf("broker address %q: %w", cfg.Addr, err)
		}
		if port, err = strconv.Atoi(p); err != nil {
			return nil, fmt.Errorf("broker address %q: bad port", cfg.Addr)
		}
	}
	if port == 0 {
		var err error
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(port),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(partitions),
		kfake.ClusterID("drove-embedded"),
	}
	if cfg.Dir != "" {
		opts = append(opts, kfake.DataDir(cfg.Dir))
	}
	if host != "" && host != "127.0.0.1" && host != "localhost" {
		// kfake listens on 127.0.0.1; listen where asked instead, which
		// is also the address it then gives clients (test/partition's
		// executors reach it from network namespaces).
		opts = append(opts, kfake.ListenFn(func(network, addr string) (net.Listener, error) {
			_, p, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			return net.Listen(network, net.JoinHostPort(host, p))
		}))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	return &BrokerServer{cluster: c}, nil
}

// Addrs are the broker addresses to give clients.
func (b *BrokerServer) Addrs() []string { return b.cluster.ListenAddrs() }

// Stop closes the broker, flushing its state to its directory.
func (b *BrokerServer) Stop() { b.cluster.Close() }
