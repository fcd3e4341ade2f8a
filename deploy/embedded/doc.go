// Package embedded runs the embedded default deployment's infrastructure in
// process: a Kafka wire-protocol broker (franz-go's kfake, persisted in a
// directory) and a PostgreSQL cluster from the system's server binaries
// (initialised in a directory on first start, run as the postgres user when
// Drove runs as root, which PostgreSQL refuses; when that user cannot
// reach the directory, as in a clone inside root's private home, the
// cluster lives under /var/lib/drove/postgres instead, with a symlink
// from the directory), and ZFS pools backed by files for the ZFS demo
// (zfs-fuse started when no ZFS answers; pools exported on a clean stop
// and imported again at the next start). `drove dev` (make run) and
// `drove broker` use it; production uses Apache Kafka and a real
// PostgreSQL, given by KAFKA_BROKERS and DATABASE_URL.
//
// Nothing else in Drove knows the broker is kfake: every component talks to
// it through the Kafka protocol.
package embedded
