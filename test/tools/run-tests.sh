#!/usr/bin/env bash
# make test's runs, beside the one broker kafkabroker hands over in
# KAFKA_BROKERS, all three at the same time:
#  - every package with the race detector, the slowest first: go test
#    starts packages in the order given, and the run lasts at least as
#    long as the last one started;
#  - the tests on zfs-fuse (zfs-tests.sh: one package at a time, as they
#    share one daemon), which wait on that daemon more than on the CPU;
#  - the scale tests (20,000 moves through the planner service; 200
#    writes and 500 watchers held through the whole system) without the
#    race detector: they measure throughput and memory, which the
#    detector multiplies several times, on code the other tests already
#    run under it.
# The main run prints as it goes; the others' output is kept and printed
# whole when all have ended, so they do not interleave. Fails if any
# failed.
set -uo pipefail
GO=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)
zlog=$(mktemp) slog=$(mktemp)
trap 'rm -f "$zlog" "$slog"' EXIT

mod=github.com/drovehq/drove
slow="$mod/test/e2e $mod/planner/service $mod/test/partition $mod/test/chaos $mod/deploy/apachekafka $mod/events/kafka $mod/cmd/drove $mod/gateway"
rest=$("$GO" list ./... | grep -v "/executor/zfs$" | grep -vxF -f <(tr ' ' '\n' <<<"$slow"))
scale='TestLoadHeld|TestGroupChangeOf20000Instances'

GO=$GO bash "$here/zfs-tests.sh" >"$zlog" 2>&1 &
zpid=$!
"$GO" test -count=1 -timeout 20m -run "^($scale)\$" "$mod/test/e2e" "$mod/planner/service" >"$slog" 2>&1 &
spid=$!
"$GO" test -race -count=1 -timeout 40m -skip "^(TestZfs.*|$scale)\$" $slow $rest
main=$?
wait "$spid"
scaled=$?
wait "$zpid"
zfs=$?
echo "---- the scale tests, without the race detector:"
cat "$slog"
echo "---- the tests on zfs-fuse (test/tools/zfs-tests.sh):"
cat "$zlog"
if [ "$main" -ne 0 ] || [ "$scaled" -ne 0 ] || [ "$zfs" -ne 0 ]; then
  echo "run-tests: FAILED (main run exit $main, scale tests exit $scaled, tests on zfs-fuse exit $zfs)"
  exit 1
fi
