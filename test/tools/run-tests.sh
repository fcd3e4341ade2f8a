#!/usr/bin/env bash
# make test's runs, beside the one broker kafkabroker hands over in
# KAFKA_BROKERS: two streams at once (the machine has two cores, and
# each stream waits on brokers and Postgres part of the time), then the
# tests on zfs-fuse.
#  A. every package but the end-to-end and ZFS ones, with the race
#     detector, two packages at a time, the slowest first (go test starts
#     packages in the order given);
#  B. the end-to-end tests (test/e2e) and the planner service's scale
#     test without the race detector, then a sample of the end-to-end
#     tests with it. The detector made the end-to-end package cost 211
#     CPU-s instead of 34 and kept each test's system (24 executors
#     polling the broker) alive twice as long; every package those tests
#     run is under it in stream A, and the sample runs whole systems in
#     one process under it.
#  Then the tests on zfs-fuse (zfs-tests.sh), alone: beside stream A's
#  end they failed in three runs of three (a timed move, a dial to the
#  broker timing out), and beside all of it they took 600 s instead of
#  200. Beside the chaos and partition tests alone (which would have
#  filled the core they leave idle) no run of four passed: zfs-fuse
#  deadlocked, or held pools busy past every bound, at equal priority,
#  with those tests at nice 10, and with zfs-fuse at nice -10; with both
#  (zfs-fuse at -10, those tests at 10) the ZFS tests passed and a
#  partition broker's warm-up timed out.
# Stream A prints as it goes; stream B keeps its output and prints it
# whole when it has ended, so the two do not interleave. Fails if any
# failed.
set -uo pipefail
GO=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)
blog=$(mktemp)
bin=$(mktemp -d)
trap 'rm -rf "$blog" "$bin"' EXIT
# One drove binary for every test that runs Drove as programs
# (testenv.Drove): each package building its own linked it seven times.
"$GO" build -o "$bin/drove" ./cmd/drove || exit 1
export DROVE_BIN=$bin/drove

mod=github.com/drovehq/drove
slow="$mod/test/partition $mod/test/chaos $mod/deploy/apachekafka $mod/events/kafka $mod/cmd/drove $mod/gateway $mod/planner/service $mod/projector $mod/executor $mod/executor/qemu"
rest=$("$GO" list ./... | grep -v -e "/executor/zfs$" -e "/test/e2e$" -e "/test/zfsenv$" | grep -vxF -f <(tr ' ' '\n' <<<"$slow"))
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
streamB >"$blog" 2>&1 &
bpid=$!
"$GO" test -race -count=1 -timeout 30m -skip "^($scale)\$" $slow $rest
arc=$?
wait "$bpid"
brc=$?
cat "$blog"
echo "---- the tests on zfs-fuse (test/tools/zfs-tests.sh):"
GO=$GO bash "$here/zfs-tests.sh"
zrc=$?
if [ "$arc" -ne 0 ] || [ "$brc" -ne 0 ] || [ "$zrc" -ne 0 ]; then
  echo "run-tests: FAILED (stream A exit $arc, stream B exit $brc, tests on zfs-fuse exit $zrc)"
  exit 1
fi
