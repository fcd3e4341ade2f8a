#!/usr/bin/env bash
# make test's runs, beside the one broker kafkabroker hands over in
# KAFKA_BROKERS, in two phases. Every package runs with the race
# detector, two packages at a time (go test's default here: the run is
# CPU-bound, and three took longer, e2e 617 s instead of 389), the
# slowest first (go test starts packages in the order given).
#  1. The heavy packages: the end-to-end tests on the sim driver, the
#     partition and chaos tests (each on a whole system, the last two on
#     three brokers of their own). Beside them, without the race
#     detector, the scale tests (20,000 moves through the planner
#     service; 200 writes and 500 watchers held through the whole
#     system) and the API fuzzer (thousands of requests from
#     schemathesis): they measure throughput and memory, or check
#     answers against the contract, at a cost the detector multiplies
#     several times, on code the other tests already run under it.
#  2. Every other package, and beside them the tests on zfs-fuse
#     (zfs-tests.sh), which wait on the daemon and on their moves' rate
#     caps more than they compute. Beside phase 1 they took 600 s instead
#     of 200 and timed moves failed; after everything, they added five
#     minutes to the run.
# Phase 1's main run prints as it goes, and so does phase 2's; the runs
# beside them keep their output and print it whole when they have ended,
# so nothing interleaves. Fails if any failed.
set -uo pipefail
GO=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)
slog=$(mktemp)
zlog=$(mktemp)
bin=$(mktemp -d)
trap 'rm -rf "$slog" "$zlog" "$bin"' EXIT
# One drove binary for every test that runs Drove as programs
# (testenv.Drove): each package building its own linked it seven times.
"$GO" build -o "$bin/drove" ./cmd/drove || exit 1
export DROVE_BIN=$bin/drove

mod=github.com/drovehq/drove
heavy="$mod/test/e2e $mod/test/partition $mod/test/chaos"
slow="$mod/deploy/apachekafka $mod/events/kafka $mod/gateway $mod/cmd/drove $mod/planner/service $mod/projector $mod/executor $mod/executor/qemu"
rest=$("$GO" list ./... | grep -v "/executor/zfs$" | grep -vxF -f <(tr ' ' '\n' <<<"$heavy $slow"))
apart='TestLoadHeld|TestGroupChangeOf20000Instances|TestAPIFuzzedBySchemathesis'

echo "---- phase 1: the end-to-end, partition and chaos tests"
"$GO" test -count=1 -timeout 20m -run "^($apart)\$" "$mod/test/e2e" "$mod/planner/service" >"$slog" 2>&1 &
spid=$!
"$GO" test -race -count=1 -timeout 30m -skip "^(TestZfs.*|$apart)\$" $heavy
heavyrc=$?
wait "$spid"
scaled=$?
echo "---- beside it, the scale tests and the API fuzzer, without the race detector:"
cat "$slog"

echo "---- phase 2: every other package"
GO=$GO bash "$here/zfs-tests.sh" >"$zlog" 2>&1 &
zpid=$!
"$GO" test -race -count=1 -timeout 20m -skip "^($apart)\$" $slow $rest
restrc=$?
wait "$zpid"
zfs=$?
echo "---- beside it, the tests on zfs-fuse (test/tools/zfs-tests.sh):"
cat "$zlog"
if [ "$heavyrc" -ne 0 ] || [ "$scaled" -ne 0 ] || [ "$restrc" -ne 0 ] || [ "$zfs" -ne 0 ]; then
  echo "run-tests: FAILED (exit codes: heavy packages $heavyrc, scale tests and fuzzer $scaled, other packages $restrc, tests on zfs-fuse $zfs)"
  exit 1
fi
