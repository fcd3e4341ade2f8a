// Command kafka measures Drove on real Apache Kafka (deploy/apachekafka,
// the version deps.sh fetches) beside the embedded kfake broker, in one
// run, and writes test/bench/results/kafka.json and a table:
//
//   - projector_eps_apache, projector_eps_kfake: projector.Replay's fold
//     rate (events/s) of the same generated log (test/bench/eventlog's,
//     evacuation-heavy log, 100,000 events; -quick: 10,000) appended to
//     each broker;
//   - plan_to_first_opcode_ms_apache, _kfake: the whole system in one
//     process (deploy/allinone, simulated executors on a fast clock) on
//     each broker; the median, over -requests evacuations of one node
//     each, of the time from appending the request to the planner's first
//     OpcodeDispatched for it (the event's own time, so a reader's delay
//     is not counted), one request at a time, after a warm-up request;
//   - takeover_s: two `drove planner` processes on the Apache broker; the
//     leader is SIGKILLed and a request appended at once; the time from
//     the SIGKILL to the standby's PlanComputed for it, which holds the
//     election's session timeout (-election-timeout, reported);
//   - broker_kill_to_append_s: a 3-node Apache Kafka cluster (topics with
//     three replicas, as production runs); the leader of the partition of
//     drove.requests that holds the most records is SIGKILLed and the
//     time taken to the first successful transactional append to that
//     partition afterwards, appends retried until one succeeds. The
//     brokers run Kafka's default broker.session.timeout.ms (reported):
//     the controller fences a silent broker only after it.
//
// Everything runs on this machine beside Postgres and the brokers' JVMs,
// so the figures include their CPU; the load average is recorded. A
// figure that could not be measured is null and its reason is in notes.
//
//	go run ./test/bench/kafka [-quick] [-drove-bin bin/drove]
package main
