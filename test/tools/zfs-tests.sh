#!/usr/bin/env bash
# Runs the tests on zfs-fuse: the ZFS driver's (executor/zfs) and the
# end-to-end tests on ZFS (test/e2e, TestZfs*; make test's main run skips
# them). If the zfs-fuse daemon deadlocked during a run (test/zfsenv's
# watchdog restarts it and prints its marker), that run goes once more:
# the deadlock is in the stand-in daemon that several simulated nodes
# share, see test/zfsenv/watchdog.go. Any other failure fails at once.
set -uo pipefail
GO=${GO:-go}
marker="ZFSENV: zfs-fuse deadlocked"
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# run PACKAGE [go test flags...]
run() {
  for attempt in 1 2; do
    "$GO" test -race -count=1 "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    [ "$rc" -eq 0 ] && return 0
    if [ "$attempt" -eq 2 ] || ! grep -q "$marker" "$log"; then
      return "$rc"
    fi
    echo "zfs-tests: zfs-fuse deadlocked during the run; running $1 once more"
  done
}

run ./executor/zfs/ -timeout 20m || exit $?
run ./test/e2e/ -run '^TestZfs' -timeout 30m || exit $?
