package kafka

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kadm"
)

// listTopics lists topics on the broker, partitions, leaders, replicas
// and ids, with a client of its own.
func listTopics(ctx context.Context, cfg Config, topics []string) (kadm.TopicDetails, error) {
	cl, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	details, err := kadm.NewClient(cl).ListTopics(ctx, cfg.wires(topics)...)
	if err != nil {
		return nil, fmt.Errorf("kafka: list topics: %w", cfg.explain(translate(err)))
	}
	return details, nil
}

// TopicIDs returns each topic's id, which the broker gives a topic when it
// creates it: the same name with another id is another log (deleted and
// created again). A reader that keeps positions outside the log (the
// planner service's snapshots) checks them against the ids they were
// taken in. A broker without topic ids answers all zeros for each.
func TopicIDs(ctx context.Context, cfg Config, topics ...string) (map[string]string, error) {
	details, err := listTopics(ctx, cfg, topics)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, t := range topics {
		d, ok := details[cfg.wire(t)]
		if !ok || d.Err != nil {
			return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, t)
		}
		out[t] = d.ID.String()
	}
	return out, nil
}
