// Package apachekafka runs real Apache Kafka brokers as child processes:
// one combined broker and controller in KRaft mode, or a cluster of three,
// for the tests (test/testenv), the benchmarks and `drove dev --kafka
// apache` (make run-kafka). Production runs Kafka itself (deploy/
// compose.yaml); this package is how Drove proves itself on the same
// engine.
//
// The broker is the one deps.sh fetches through Maven at the version
// pom.xml pins, run from its jars with the system's Java (17 or later).
// A node's directory holds its server.properties, its log and its data;
// storage is formatted once, so a cluster started again on the same
// directories keeps its topics. Ports are chosen free on the node's host
// unless given. A started node is stopped cleanly (SIGTERM, a controlled
// shutdown), or killed with SIGKILL on demand as a crash would; on Linux
// it also dies with the process that started it.
package apachekafka
