#!/usr/bin/env bash
# Runs the tests on zfs-fuse: the ZFS driver's (executor/zfs) and the
# end-to-end tests on ZFS (test/e2e, TestZfs*; make test's other run of
# test/e2e skips them), side by side (each waits on zfs-fuse and on its
# moves' rate caps more than it computes, so together they take little
# longer than the longest). The driver's tests run under the race
# detector; the end-to-end ones do not, as the rest of test/e2e in make
# test (run-tests.sh): the detector made them cost 234 CPU-s instead of
# about 110 and stretched the driver's tests beside them from 200 s to
# 300. If the zfs-fuse daemon deadlocked during a run (test/zfsenv's
# watchdog restarts it and prints its marker), that run goes once more: the deadlock is in the stand-in daemon that
# several simulated nodes share, see test/zfsenv/watchdog.go. Any other
# failure fails. The output of each is printed whole when it has ended,
# so they do not interleave.
set -uo pipefail
GO=${GO:-go}
marker="ZFSENV: zfs-fuse deadlocked"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# run NAME [go test flags and package...]
run() {
  local name=$1 log="$dir/$1.log"
  shift
  for attempt in 1 2; do
    "$GO" test -count=1 "$@" >"$log" 2>&1
    rc=$?
    cat "$log" >>"$dir/$name.all"
    [ "$rc" -eq 0 ] && return 0
    if [ "$attempt" -eq 2 ] || ! grep -q "$marker" "$log"; then
      return "$rc"
    fi
    echo "zfs-tests: zfs-fuse deadlocked during the run; running the $name tests once more" >>"$dir/$name.all"
  done
}

# The driver's tests in two halves at once, each about two minutes
# alone: one after the other they were the run's last five minutes.
half='^(TestDriverContract|TestMigrationContract|TestMigrateWhileWriting|TestSwitchFaultRestoresTheSource|TestMigrationPauseRateAbort)$'
run driver-contracts -race ./executor/zfs/ -run "$half" -timeout 20m &
contracts=$!
run driver-rest -race ./executor/zfs/ -skip "$half" -timeout 20m &
rest=$!
run e2e ./test/e2e/ -run '^TestZfs' -timeout 30m &
e2e=$!
rc=0
for p in "$contracts" "$rest" "$e2e"; do
  wait "$p" || rc=1
done
cat "$dir/driver-contracts.all" "$dir/driver-rest.all" "$dir/e2e.all"
exit $rc
