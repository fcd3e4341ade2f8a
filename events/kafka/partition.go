package kafka

import "github.com/twmb/franz-go/pkg/kgo"

// partitioner is how every Producer places a record: Kafka's default for
// keyed records (murmur2 of the key, sign bit masked, modulo the partition
// count), so a Java or librdkafka producer places Drove's keys alike. Every
// event has a key (events.New derives it), so no record falls back to the
// sticky choice.
var partitioner = kgo.StickyKeyPartitioner(nil)

// PartitionOf is the partition of a topic with partitions partitions that
// an event with key lands in: an executor reads only the partition of
// drove.opcodes its node's name maps to.
func PartitionOf(topic, key string, partitions int) int32 {
	return int32(partitioner.ForTopic(topic).Partition(&kgo.Record{Key: []byte(key)}, partitions))
}
