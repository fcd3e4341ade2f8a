// Command projector measures the projector's fold: how many events per
// second it folds into Postgres on a replay of a realistic log.
//
//	go run ./test/bench/projector           # a 100,000-event log
//	go run ./test/bench/projector -quick    # a 10,000-event log
//
// It starts a real Apache Kafka broker (make test-deps fetches it; -kafka
// embedded runs on franz-go's kfake in this process instead) and the
// embedded Postgres in a temporary directory, appends the log of an
// evacuation-heavy cluster (4 groups of 50 nodes with 20 mirrored
// instances each; evacuations with dry runs and approvals, plans, jobs,
// opcodes, move statuses, placements, audit records, and mostly progress
// events, some moves failing) in Kafka transactions of -txn-events events,
// then measures two things:
//
//  1. the live projector (projector.Run) catching up from offset zero on an
//     empty schema: the time until its offsets reach the log's end;
//  2. projector.Replay folding the whole log into a fresh schema, and
//     comparing it with the live views: events per second is Report.Events
//     / Report.FoldDuration. The bench fails (exit 1) when the views differ.
//
// Between the two it COPYs the live event_log's rows into an empty table
// of event_log's shape and into a bare table of its columns
// (test/bench/copylimit): the projector's figures are reported as ratios
// to the first (live_ratio_to_copy, replay_ratio_to_copy) and to the
// second (live_ratio_to_bare_copy, replay_ratio_to_bare_copy), measured
// in the same run, since on a shared machine only a ratio holds still.
// Both run on the same machine as the broker and Postgres; the summary
// records the CPU per 100,000 events of this process and of the Postgres
// server, this process's resident set, and the load average, so a busy
// machine shows. It is printed as a table and written as JSON to -out.
//
// -brokers (or DROVE_BENCH_BROKERS) runs it on Kafka brokers with empty
// Drove topics instead of a broker it starts; -postgres (with
// -postgres-data for the server's CPU) on an empty database of another
// server.
package main
