// Package test holds the tests that span the whole system (end to end,
// chaos, partitions, Ganeti's hail suite), the benchmarks, and what tests
// share: testenv starts real PostgreSQL and Apache Kafka, zfsenv real
// zfs-fuse pools, proc the system as separate processes, syncbuf a log
// sink. DESIGN.md maps each folder.
package test
