#!/usr/bin/env bash
# make test's runs, beside the one broker kafkabroker hands over in
# KAFKA_BROKERS, in two phases of two streams each (the machine has two
# cores, and every stream waits on brokers, Postgres or zfs-fuse part of
# the time):
#  1. the chaos and partition tests (three-broker clusters of their own,
#     to kill and cut off; they mostly wait on leases and kills) beside
#     the tests on zfs-fuse (zfs-tests.sh; they mostly wait on zfs-fuse
#     and on their moves' rate caps). Each leaves a core idle half the
#     time alone: together they fill the machine. zfs-fuse runs at nice
#     -10 (test/zfsenv): at equal priority beside them it deadlocked, and
#     held pools busy past every test's bound. (The chaos and partition
#     tests at nice 10 instead starved: a broker's warm-up timed out.)
#     The ZFS tests share the broker with nothing else then (beside the
#     other packages' tests a dial to it timed out under load).
#  2. A. every other package but the end-to-end one, with the race
#        detector, two packages at a time, the slowest first (go test
#        starts packages in the order given);
#     B. the end-to-end tests (test/e2e) and the planner service's scale
#        test without the race detector, then a sample of the end-to-end
#        tests with it. The detector made the end-to-end package cost 211
#        CPU-s instead of 34 and kept each test's system (24 executors
#        polling the broker) alive twice as long; every package those
#        tests run is under it in stream A, and the sample runs whole
#        systems in one process under it.
# The streams that would interleave keep their output and print it whole
# when they have ended. Fails if any failed.
set -uo pipefail
GO=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)
blog=$(mktemp)
zlog=$(mktemp)
bin=$(mktemp -d)
trap 'rm -rf "$blog" "$zlog" "$bin"' EXIT
# One drove binary for every test that runs Drove as programs
# (testenv.Drove): each package building its own linked it seven times.
"$GO" build -o "$bin/drove" ./cmd/drove || exit 1
export DROVE_BIN=$bin/drove

mod=github.com/drovehq/drove
first="$mod/test/partition $mod/test/chaos"
slow="$mod/deploy/apachekafka $mod/events/kafka $mod/cmd/drove $mod/gateway $mod/planner/service $mod/projector $mod/executor $mod/executor/qemu"
rest=$("$GO" list ./... | grep -v -e "/executor/zfs$" -e "/test/e2e$" | grep -vxF -f <(tr ' ' '\n' <<<"$first $slow"))
scale='TestGroupChangeOf20000Instances'
# The sample under the race detector: evacuations and migrations watched
# through the API, a restart of the projector and an executor mid-move,
# and refused requests.
sample='TestEvacuateTwoNodes|TestRestartProjectorAndExecutorMidEvacuation|TestMigrationAutomaticWatchedTwice|TestBadRequestsAppendNothing'

streamB() {
  local rc=0
  echo "---- the end-to-end tests and the planner's scale test, without the race detector:"
  "$GO" test -count=1 -timeout 20m -skip '^TestZfs' "$mod/test/e2e" || rc=1
  "$GO" test -count=1 -timeout 20m -run "^($scale)\$" "$mod/planner/service" || rc=1
  echo "---- a sample of the end-to-end tests, with the race detector:"
  "$GO" test -race -count=1 -timeout 20m -run "^($sample)\$" "$mod/test/e2e" || rc=1
  return $rc
}

echo "---- phase 1: the chaos and partition tests, beside the tests on zfs-fuse (test/tools/zfs-tests.sh)"
GO=$GO bash "$here/zfs-tests.sh" >"$zlog" 2>&1 &
zpid=$!
"$GO" test -race -count=1 -timeout 30m $first
crc=$?
wait "$zpid"
zrc=$?
cat "$zlog"

echo "---- phase 2: every other package with the race detector, beside the end-to-end tests"
streamB >"$blog" 2>&1 &
bpid=$!
"$GO" test -race -count=1 -timeout 30m -skip "^($scale)\$" $slow $rest
arc=$?
wait "$bpid"
brc=$?
cat "$blog"
if [ "$crc" -ne 0 ] || [ "$zrc" -ne 0 ] || [ "$arc" -ne 0 ] || [ "$brc" -ne 0 ]; then
  echo "run-tests: FAILED (chaos and partition exit $crc, tests on zfs-fuse exit $zrc, stream A exit $arc, stream B exit $brc)"
  exit 1
fi
