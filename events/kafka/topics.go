package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/drovehq/drove/events"
	"github.com/drovehq/drove/events/retry"
)

// topicConfig is what every Drove topic is created with. The log is the
// source of truth, so nothing may age out of it: Apache Kafka's defaults
// (retention.ms 7 days, a broker-wide retention.bytes, compaction on some
// clusters) would silently delete inventory and history from every
// replay. Only a topic of current state (events.Compacted: heartbeats,
// whose decisions are history on drove.inventory) is compacted, its
// segments rolled hourly so that the broker can compact them (it never
// compacts the segment being written). Record size is Drove's too: a
// plan of a large request is bigger than the broker's 1 MB default.
func topicConfig(c Config, topic string) map[string]string {
	minISR := "1"
	if c.ReplicationFactor >= 3 {
		minISR = "2" // a committed event survives the loss of one broker
	}
	if c.MinInsyncReplicas > 0 {
		minISR = strconv.Itoa(c.MinInsyncReplicas)
	}
	cfg := map[string]string{
		"retention.ms":           "-1",
		"retention.bytes":        "-1",
		"cleanup.policy":         "delete",
		"max.message.bytes":      strconv.Itoa(c.MaxRecordBytes),
		"message.timestamp.type": "CreateTime", // events carry their own time
		"min.insync.replicas":    minISR,
	}
	if events.Compacted(topic) {
		cfg["cleanup.policy"] = "compact"
		cfg["segment.ms"] = strconv.Itoa(compactedSegmentMS)
	}
	return cfg
}

// compactedSegmentMS bounds what a compacted topic holds beyond each
// key's latest event: about an hour of heartbeats (720 per node).
const compactedSegmentMS = 3_600_000

// deletes says whether a topic setting makes the broker delete events it
// must keep: any finite retention; on a topic of history, compaction
// (which drops all but the latest event of a key); on a compacted topic,
// deletion by age besides compaction (which may drop a key's latest).
func deletes(topic, name, value string) bool {
	switch name {
	case "retention.ms", "retention.bytes":
		return value != "-1"
	case "cleanup.policy":
		if events.Compacted(topic) {
			return value != "compact" && value != "delete" // "delete" keeps every beat: only warned about
		}
		return value != "delete"
	}
	return false
}

// EnsureTopics creates the topics that do not exist, with partitions
// partitions, cfg.ReplicationFactor replicas and topicConfig. Topics that
// exist are checked, never altered: they may be an operator's, set by
// hand. If one would delete events (finite retention, compaction: deletes)
// EnsureTopics fails with ErrTopicConfig naming the topic, the setting and
// how to fix it, unless cfg.AllowFiniteRetention, when it only warns.
// Other settings that differ from topicConfig are warned about. Existing
// topics keep their partition count: changing it would move keys to other
// partitions and break the per-key order events rely on.
func EnsureTopics(ctx context.Context, cfg Config, partitions int, topics ...string) error {
	err := cfg.validate(false)
	if partitions < 1 {
		err = errors.Join(err, fmt.Errorf("%w: partitions: %d (want at least 1)", ErrInvalidConfig, partitions))
	}
	if err != nil {
		return err
	}
	if len(topics) == 0 {
		return nil
	}
	cfg = cfg.withDefaults()
	cl, err := NewClient(cfg)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	// Topics of one configuration are created (and checked) together.
	var errs []error
	for _, group := range byConfig(topics) {
		want := topicConfig(cfg, group[0])
		created, err := createTopics(ctx, adm, cfg, partitions, want, group)
		if err == nil {
			err = waitServed(ctx, adm, cfg, created)
		}
		if err != nil {
			return cfg.explain(err)
		}
		var existing []string
		for _, t := range group {
			if !slices.Contains(created, t) {
				existing = append(existing, t)
			}
		}
		errs = append(errs, checkTopicConfig(ctx, adm, cfg, want, existing))
	}
	return errors.Join(errs...)
}

// byConfig splits topics into the topics of history and the compacted
// ones, each in the order given.
func byConfig(topics []string) [][]string {
	var history, compacted []string
	for _, t := range topics {
		if events.Compacted(t) {
			compacted = append(compacted, t)
		} else {
			history = append(history, t)
		}
	}
	return slices.DeleteFunc([][]string{history, compacted}, func(g []string) bool { return len(g) == 0 })
}

// createTopics creates what does not exist and returns what it created.
// It asks only for the topics the brokers do not list: a principal
// without CREATE (every service but the one that sets the cluster up,
// under Drove's ACLs) is refused even the creation of a topic that
// exists.
func createTopics(ctx context.Context, adm *kadm.Client, cfg Config, partitions int, want map[string]string, topics []string) ([]string, error) {
	topics, err := missingTopics(ctx, adm, cfg, topics)
	if err != nil || len(topics) == 0 {
		return nil, err
	}
	configs := map[string]*string{}
	for k, v := range want {
		configs[k] = kadm.StringPtr(v)
	}
	resps, err := adm.CreateTopics(ctx, int32(partitions), cfg.ReplicationFactor, configs, cfg.wires(topics)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: create topics: %w", translate(err))
	}
	var errs []error
	var created []string
	for _, r := range resps.Sorted() {
		switch {
		case r.Err == nil:
			created = append(created, cfg.local(r.Topic))
		case !errors.Is(r.Err, kerr.TopicAlreadyExists):
			errs = append(errs, fmt.Errorf("kafka: create topic %s: %w (%s)", r.Topic, translate(r.Err), r.ErrMessage))
		}
	}
	return created, errors.Join(errs...)
}

// missingTopics are those of topics the brokers do not list.
func missingTopics(ctx context.Context, adm *kadm.Client, cfg Config, topics []string) ([]string, error) {
	details, err := adm.ListTopics(ctx, cfg.wires(topics)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: list topics: %w", translate(err))
	}
	var missing []string
	for _, t := range topics {
		d, ok := details[cfg.wire(t)]
		switch {
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			missing = append(missing, t)
		case d.Err != nil:
			return nil, fmt.Errorf("kafka: describe topic %s: %w", cfg.wire(t), translate(d.Err))
		}
	}
	return missing, nil
}

// waitServed waits until the brokers serve every partition of topics with
// a leader. Apache Kafka answers a creation once its controller has
// committed it; the brokers learn of it a moment later, and until then
// answer UNKNOWN_TOPIC_OR_PARTITION to whoever uses the topic at once.
func waitServed(ctx context.Context, adm *kadm.Client, cfg Config, topics []string) error {
	return pollTopics(ctx, adm, cfg, topics, func(t string, d kadm.TopicDetail, listed bool) error {
		if !listed || d.Err != nil || len(d.Partitions) == 0 {
			return fmt.Errorf("kafka: created topic %s is not served yet", t)
		}
		for _, p := range d.Partitions {
			if p.Err != nil || p.Leader < 0 {
				return fmt.Errorf("kafka: created topic %s/%d has no leader yet", t, p.Partition)
			}
		}
		return nil
	})
}

// pollTopics asks the brokers about topics, quickly and again, until
// check passes for every one of them (listed: the broker names it).
func pollTopics(ctx context.Context, adm *kadm.Client, cfg Config, topics []string,
	check func(topic string, d kadm.TopicDetail, listed bool) error) error {
	if len(topics) == 0 {
		return nil
	}
	quick := retry.Backoff{Initial: 20 * time.Millisecond, Max: 500 * time.Millisecond}
	return quick.Do(ctx, nil, func(int) error {
		details, err := adm.ListTopics(ctx, cfg.wires(topics)...)
		if err != nil {
			return fmt.Errorf("kafka: list topics: %w", translate(err))
		}
		for _, t := range cfg.wires(topics) {
			d, listed := details[t]
			if err := check(t, d, listed); err != nil {
				return err
			}
		}
		return nil
	}, nil)
}

// checkTopicConfig refuses existing topics that would delete events and
// warns about other settings that differ from want.
func checkTopicConfig(ctx context.Context, adm *kadm.Client, cfg Config, want map[string]string, topics []string) error {
	if len(topics) == 0 {
		return nil
	}
	diff, err := topicConfigDiff(ctx, adm, cfg, want, topics)
	if err != nil {
		return cfg.explain(err)
	}
	var errs []error
	for _, d := range diff {
		switch {
		case deletes(d.topic, d.name, d.got) && !cfg.AllowFiniteRetention:
			errs = append(errs, fmt.Errorf("%w: topic %s has %s=%s: the broker would delete events, and the log is Drove's source of truth; "+
				"set %s=%s on it (kafka-configs --alter --entity-type topics --entity-name %s --add-config %s=%s), "+
				"or allow it explicitly (--allow-finite-retention, DROVE_ALLOW_FINITE_RETENTION=1)",
				ErrTopicConfig, cfg.wire(d.topic), d.name, d.got, d.name, d.want, cfg.wire(d.topic), d.name, d.want))
		case deletes(d.topic, d.name, d.got):
			cfg.Logger.Warn("topic deletes events; running anyway, as the operator allowed (AllowFiniteRetention)",
				"topic", d.topic, "setting", d.name, "value", d.got, "drove_wants", d.want)
		default:
			cfg.Logger.Warn("topic setting differs from what Drove creates topics with", "topic", d.topic,
				"setting", d.name, "value", d.got, "drove_wants", d.want)
		}
	}
	return errors.Join(errs...)
}

type configDiff struct{ topic, name, got, want string }

// topicConfigDiff lists the settings of topics that differ from want.
func topicConfigDiff(ctx context.Context, adm *kadm.Client, cfg Config, want map[string]string, topics []string) ([]configDiff, error) {
	described, err := adm.DescribeTopicConfigs(ctx, cfg.wires(topics)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: read topic configuration: %w", translate(err))
	}
	names := make([]string, 0, len(want))
	for k := range want {
		names = append(names, k)
	}
	slices.Sort(names)
	var out []configDiff
	for _, rc := range described {
		if rc.Err != nil {
			return nil, fmt.Errorf("kafka: read the configuration of %s: %w", rc.Name, translate(rc.Err))
		}
		got := map[string]string{}
		for _, c := range rc.Configs {
			got[c.Key] = c.MaybeValue()
		}
		for _, k := range names {
			if got[k] != want[k] {
				out = append(out, configDiff{topic: cfg.local(rc.Name), name: k, got: got[k], want: want[k]})
			}
		}
	}
	return out, nil
}
