#!/usr/bin/env bash
# Runs the tests on zfs-fuse: the ZFS driver's (executor/zfs) and the
# end-to-end tests on ZFS (test/e2e, TestZfs*; make test's other run of
# test/e2e skips them), the two packages side by side (each waits on
# zfs-fuse and on its moves' rate caps more than it computes, so together
# they take little longer than the longer one). The driver's tests run
# under the race detector; the end-to-end ones do not, as the rest of
# test/e2e in make test (run-tests.sh): the detector made them cost 234
# CPU-s instead of about 110 and stretched the driver's tests beside them
# from 200 s to 300. If the zfs-fuse daemon deadlocked during a run
# (test/zfsenv's watchdog restarts it and prints its marker), that
# package runs once more: the deadlock is in the stand-in daemon that
# several simulated nodes share, see test/zfsenv/watchdog.go. Any other
# failure fails. The output of each is printed whole when it has ended,
# so the two do not interleave.
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

run driver -race ./executor/zfs/ -timeout 20m &
driver=$!
run e2e ./test/e2e/ -run '^TestZfs' -timeout 30m &
e2e=$!
wait "$driver"
a=$?
wait "$e2e"
b=$?
cat "$dir/driver.all" "$dir/e2e.all"
[ "$a" -eq 0 ] && [ "$b" -eq 0 ]
