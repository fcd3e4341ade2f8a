package kafka

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// topicConfig is what every Drove topic is created with, and what
// EnsureTopics checks (and sets) on topics that already exist. The log is
// the source of truth, so nothing may age out of it: Apache Kafka's
// defaults (retention.ms 7 days, a broker-wide retention.bytes, compaction
// on some clusters) would silently delete inventory and history from every
// replay. Record size is Drove's too: a plan of a large request is bigger
// than the broker's 1 MB default.
func topicConfig(c Config) map[string]string {
	minISR := "1"
	if c.ReplicationFactor >= 3 {
		minISR = "2" // a committed event survives the loss of one broker
	}
	return map[string]string{
		"retention.ms":           "-1",
		"retention.bytes":        "-1",
		"cleanup.policy":         "delete",
		"max.message.bytes":      strconv.Itoa(c.MaxRecordBytes),
		"message.timestamp.type": "CreateTime", // events carry their own time
		"min.insync.replicas":    minISR,
	}
}

// EnsureTopics creates the topics that do not exist, with partitions
// partitions, cfg.ReplicationFactor replicas and topicConfig; then it
// reads every topic's configuration back, sets what differs from
// topicConfig (a topic created by hand or by an older Drove) and fails,
// naming the topic and setting, when the broker keeps another value.
// Existing topics keep their partition count: changing it would move keys
// to other partitions and break the per-key order events rely on.
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
	cl, err := kgo.NewClient(cfg.clientOpts()...)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	want := topicConfig(cfg)
	if err := createTopics(ctx, adm, cfg, partitions, want, topics); err != nil {
		return cfg.explain(err)
	}
	return enforceTopicConfig(ctx, adm, want, topics)
}

func createTopics(ctx context.Context, adm *kadm.Client, cfg Config, partitions int, want map[string]string, topics []string) error {
	configs := map[string]*string{}
	for k, v := range want {
		configs[k] = kadm.StringPtr(v)
	}
	resps, err := adm.CreateTopics(ctx, int32(partitions), cfg.ReplicationFactor, configs, topics...)
	if err != nil {
		return fmt.Errorf("kafka: create topics: %w", translate(err))
	}
	var errs []error
	for _, r := range resps.Sorted() {
		if r.Err != nil && !errors.Is(r.Err, kerr.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("kafka: create topic %s: %w (%s)", r.Topic, translate(r.Err), r.ErrMessage))
		}
	}
	return errors.Join(errs...)
}

// enforceTopicConfig sets what differs from want and checks it took.
func enforceTopicConfig(ctx context.Context, adm *kadm.Client, want map[string]string, topics []string) error {
	diff, err := topicConfigDiff(ctx, adm, want, topics)
	if err != nil || len(diff) == 0 {
		return err
	}
	var alters []kadm.AlterConfig
	for _, d := range diff {
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: d.name, Value: kadm.StringPtr(d.want)})
	}
	resps, err := adm.AlterTopicConfigs(ctx, alters, topics...)
	if err != nil {
		return fmt.Errorf("kafka: set topic configuration: %w", translate(err))
	}
	for _, r := range resps {
		if r.Err != nil {
			return fmt.Errorf("kafka: set the configuration of %s: %w (%s)", r.Name, translate(r.Err), r.ErrMessage)
		}
	}
	if diff, err = topicConfigDiff(ctx, adm, want, topics); err != nil || len(diff) == 0 {
		return err
	}
	var errs []error
	for _, d := range diff {
		errs = append(errs, fmt.Errorf("%w: topic %s keeps %s=%s after Drove set %s", ErrTopicConfig, d.topic, d.name, d.got, d.want))
	}
	return errors.Join(errs...)
}

type configDiff struct{ topic, name, got, want string }

// topicConfigDiff lists the settings of topics that differ from want.
func topicConfigDiff(ctx context.Context, adm *kadm.Client, want map[string]string, topics []string) ([]configDiff, error) {
	described, err := adm.DescribeTopicConfigs(ctx, topics...)
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
				out = append(out, configDiff{topic: rc.Name, name: k, got: got[k], want: want[k]})
			}
		}
	}
	return out, nil
}
