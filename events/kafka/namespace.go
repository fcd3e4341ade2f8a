package kafka

import "strings"

// The names a Config gives the broker (Namespace in front) and the names
// its callers use, converted at the edge of this package: everything
// inside a Reader, Producer or Checkpoint above the franz-go client works
// with the callers' names.

// wire is topic (or a group or transactional ID) as the broker knows it.
func (c Config) wire(name string) string { return c.Namespace + name }

// wires is wire of each of names.
func (c Config) wires(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = c.wire(n)
	}
	return out
}

// local is a name the broker gave back, as the callers know it.
func (c Config) local(name string) string { return strings.TrimPrefix(name, c.Namespace) }

// inNamespace says whether a name the broker listed belongs to c.
func (c Config) inNamespace(name string) bool { return strings.HasPrefix(name, c.Namespace) }

// wirePositions is ps keyed by the broker's names.
func (c Config) wirePositions(ps Positions) Positions {
	if c.Namespace == "" {
		return ps
	}
	out := make(Positions, len(ps))
	for tp, at := range ps {
		out[TopicPartition{c.wire(tp.Topic), tp.Partition}] = at
	}
	return out
}

// localPositions is ps keyed by the callers' names.
func (c Config) localPositions(ps Positions) Positions {
	if c.Namespace == "" {
		return ps
	}
	out := make(Positions, len(ps))
	for tp, at := range ps {
		out[TopicPartition{c.local(tp.Topic), tp.Partition}] = at
	}
	return out
}
