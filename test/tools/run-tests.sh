#!/usr/bin/env bash
# make test's runs, beside the one broker kafkabroker hands over in
# KAFKA_BROKERS: every package but the tests on zfs-fuse, and at the same
# time the tests on zfs-fuse (zfs-tests.sh: one package at a time, as
# they share one daemon). The ZFS tests wait on that daemon more than on
# the CPU, so beside the main run they cost minutes less than after it.
# The main run prints as it goes; the ZFS run's output is kept and printed
# whole when both have ended, so the two do not interleave. Fails if
# either failed.
set -uo pipefail
GO=${GO:-go}
here=$(cd "$(dirname "$0")" && pwd)
zlog=$(mktemp)
trap 'rm -f "$zlog"' EXIT

GO=$GO bash "$here/zfs-tests.sh" >"$zlog" 2>&1 &
zpid=$!
"$GO" test -race -count=1 -timeout 40m -skip '^TestZfs' $("$GO" list ./... | grep -v '/executor/zfs$')
main=$?
wait "$zpid"
zfs=$?
echo "---- the tests on zfs-fuse (test/tools/zfs-tests.sh):"
cat "$zlog"
if [ "$main" -ne 0 ] || [ "$zfs" -ne 0 ]; then
  echo "run-tests: FAILED (main run exit $main, tests on zfs-fuse exit $zfs)"
  exit 1
fi
