#!/usr/bin/env bash
# make test's runs, beside the one broker kafkabroker hands over in
# KAFKA_BROKERS:
#  - every package with the race detector, the slowest first: go test
#    starts packages in the order given, and the run lasts at least as
#    long as the last one started; two at a time (go test's default here:
#    the run is CPU-bound, and three took longer, e2e 617 s instead of
#    389);
#  - at the same time, without the race detector, the scale tests
#    (20,000 moves through the planner service; 200 writes and 500
#    watchers held through the whole system) and the API fuzzer
#    (thousands of requests from schemathesis): they measure throughput
#    and memory, or check answers against the contract, at a cost the
#    detector multiplies several times, on code the other tests already
#    run under it;
#  - then, apart from the main run, the tests on zfs-fuse (zfs-tests.sh).
#    Beside the main run they took 600 s instead of 200 and timed moves
#    failed.
# The main run prints as it goes; the scale run's output is kept and
# printed whole when it has ended, so the two do not interleave. Fails if
# any failed.
set -uo pipefail
GO=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)
slog=$(mktemp)
bin=$(mktemp -d)
trap 'rm -rf "$slog" "$bin"' EXIT
# One drove binary for every test that runs Drove as programs
# (testenv.Drove): each package building its own linked it seven times.
"$GO" build -o "$bin/drove" ./cmd/drove || exit 1
export DROVE_BIN=$bin/drove

mod=github.com/drovehq/drove
slow="$mod/test/e2e $mod/planner/service $mod/test/partition $mod/test/chaos $mod/deploy/apachekafka $mod/events/kafka $mod/cmd/drove $mod/gateway"
rest=$("$GO" list ./... | grep -v "/executor/zfs$" | grep -vxF -f <(tr ' ' '\n' <<<"$slow"))
apart='TestLoadHeld|TestGroupChangeOf20000Instances|TestAPIFuzzedBySchemathesis'

"$GO" test -count=1 -timeout 20m -run "^($apart)\$" "$mod/test/e2e" "$mod/planner/service" >"$slog" 2>&1 &
spid=$!
"$GO" test -race -count=1 -timeout 40m -skip "^(TestZfs.*|$apart)\$" $slow $rest
main=$?
wait "$spid"
scaled=$?
echo "---- the scale tests and the API fuzzer, without the race detector:"
cat "$slog"
echo "---- the tests on zfs-fuse (test/tools/zfs-tests.sh):"
GO=$GO bash "$here/zfs-tests.sh"
zfs=$?
if [ "$main" -ne 0 ] || [ "$scaled" -ne 0 ] || [ "$zfs" -ne 0 ]; then
  echo "run-tests: FAILED (main run exit $main, scale tests and fuzzer exit $scaled, tests on zfs-fuse exit $zfs)"
  exit 1
fi
