package kafka

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Ping checks that the brokers answer and lists them: for health checks
// and for tools that must fail fast when nothing listens.
func Ping(ctx context.Context, cfg Config) error {
	cl, err := NewClient(cfg)
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).ListBrokers(ctx); err != nil {
		return cfg.withDefaults().explain(translate(err))
	}
	return nil
}

// BrokerIDs returns the ids of the brokers the cluster lists: those
// registered with its controller and not fenced. A cluster being started
// answers with fewer than it will have.
func BrokerIDs(ctx context.Context, cfg Config) ([]int32, error) {
	cl, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	bs, err := kadm.NewClient(cl).ListBrokers(ctx)
	if err != nil {
		return nil, cfg.withDefaults().explain(translate(err))
	}
	return bs.NodeIDs(), nil
}

// TopicDescription is a topic as the broker describes it.
type TopicDescription struct {
	Partitions        int
	ReplicationFactor int               // replicas of its first partition
	Configs           map[string]string // every setting, as in force
}

// Describe describes topics on the broker: what an operator checks to see
// that Drove's topics carry Drove's settings.
func Describe(ctx context.Context, cfg Config, topics ...string) (map[string]TopicDescription, error) {
	cl, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	details, err := adm.ListTopics(ctx, cfg.wires(topics)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: list topics: %w", cfg.explain(translate(err)))
	}
	configs, err := adm.DescribeTopicConfigs(ctx, cfg.wires(topics)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: read topic configuration: %w", translate(err))
	}
	out := map[string]TopicDescription{}
	for _, d := range details {
		if d.Err != nil {
			return nil, fmt.Errorf("kafka: %s: %w", cfg.local(d.Topic), translate(d.Err))
		}
		td := TopicDescription{Partitions: len(d.Partitions), Configs: map[string]string{}}
		if p, ok := d.Partitions[0]; ok {
			td.ReplicationFactor = len(p.Replicas)
		}
		out[cfg.local(d.Topic)] = td
	}
	for _, rc := range configs {
		for _, c := range rc.Configs {
			out[cfg.local(rc.Name)].Configs[c.Key] = c.MaybeValue()
		}
	}
	return out, nil
}

// UnderReplicated names every partition of the cluster, the internal
// topics' too, whose in-sync replicas are fewer than its replicas or that
// has no leader: after a broker rejoins, none is left once it has caught
// up, and only then can another broker be lost without stopping writes.
// Partitions outside cfg's Namespace are named as the broker names them.
func UnderReplicated(ctx context.Context, cfg Config) ([]string, error) {
	cl, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	details, err := kadm.NewClient(cl).ListTopicsWithInternal(ctx)
	if err != nil {
		return nil, fmt.Errorf("kafka: list topics: %w", cfg.explain(translate(err)))
	}
	var out []string
	for _, d := range details {
		for _, p := range d.Partitions {
			if p.Err != nil || len(p.ISR) < len(p.Replicas) || p.Leader < 0 {
				out = append(out, fmt.Sprintf("%s/%d", d.Topic, p.Partition))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// ListTopics returns the names of the cluster's topics in cfg's
// Namespace, without it, sorted.
func ListTopics(ctx context.Context, cfg Config) ([]string, error) {
	cl, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	details, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return nil, fmt.Errorf("kafka: list topics: %w", translate(err))
	}
	var names []string
	for _, n := range details.Names() {
		if cfg.inNamespace(n) {
			names = append(names, cfg.local(n))
		}
	}
	slices.Sort(names)
	return names, nil
}

// DeleteTopics deletes topics, and every event in them: for test clusters
// shared between runs, never for Drove's own topics.
func DeleteTopics(ctx context.Context, cfg Config, topics ...string) error {
	if len(topics) == 0 {
		return nil
	}
	cl, err := NewClient(cfg)
	if err != nil {
		return err
	}
	defer cl.Close()
	resps, err := kadm.NewClient(cl).DeleteTopics(ctx, cfg.wires(topics)...)
	if err == nil {
		err = resps.Error()
	}
	if err != nil {
		return fmt.Errorf("kafka: delete topics %v: %w", topics, translate(err))
	}
	return waitGone(ctx, kadm.NewClient(cl), cfg, topics)
}

// waitGone waits until the broker no longer lists topics. The controller
// answers a deletion once it has decided it; a broker serves the topic's
// records until its metadata catches up (a test that deleted a topic and
// read it at once read its old records, 1 run in some 20).
func waitGone(ctx context.Context, adm *kadm.Client, cfg Config, topics []string) error {
	return pollTopics(ctx, adm, cfg, topics, func(t string, d kadm.TopicDetail, listed bool) error {
		if listed && d.Err == nil {
			return fmt.Errorf("kafka: deleted topic %s is still served", t)
		}
		return nil
	})
}

// Bounds returns the start and the end (last stable offset) of every
// partition of topics, asked of the broker without consuming: a client
// closed while its first fetch is in flight trips a data race inside
// franz-go (its Close reads the fetch session a fetch still writes).
func Bounds(ctx context.Context, cfg Config, topics ...string) (starts, ends Positions, err error) {
	cl, err := NewClient(cfg)
	if err != nil {
		return nil, nil, err
	}
	defer cl.Close()
	return cfg.listBounds(ctx, kadm.NewClient(cl), topics)
}

// Ends returns the end (last stable offset) of every partition of topics:
// where a reader that started now would stop, and, less a reader's
// position, its lag.
func Ends(ctx context.Context, cfg Config, topics ...string) (Positions, error) {
	cl, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	_, ends, err := cfg.listBounds(ctx, kadm.NewClient(cl), topics)
	return ends, err
}

// After returns, for every partition of topics, the first offset whose
// record was stamped at or after t (producers stamp records with their
// events' time), or the partition's end when none was: where a reader
// starts to see everything appended since t. Stamps are the producers'
// clocks, so a record stamped earlier may follow; a reader that must not
// miss one starts from a little before t.
func After(ctx context.Context, cfg Config, t time.Time, topics ...string) (Positions, error) {
	cl, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	lo, err := kadm.NewClient(cl).ListOffsetsAfterMilli(ctx, t.UnixMilli(), cfg.wires(topics)...)
	if err == nil {
		err = lo.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("kafka: offsets after %s of %v: %w", t.Format(time.RFC3339Nano), topics, translate(err))
	}
	out := Positions{}
	lo.Each(func(o kadm.ListedOffset) { out[TopicPartition{cfg.local(o.Topic), o.Partition}] = o.Offset })
	return out, nil
}
