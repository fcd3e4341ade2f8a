#!/usr/bin/env bash
# Builds, in $T, the files Ganeti's hail checks read from $T, the way
# Ganeti's test/hs/offline-test.sh builds them: the real hspace for the
# simulated cluster, sed for the variants of Ganeti's requests. Only the
# files the hail checks use are built (offline-test.sh also prepares data
# for hbal, hinfo and hscan). Run from the directory holding test/data.
set -euo pipefail
: "${T:?}" "${TESTDATA_DIR:?}" "${HSPACE:=hspace}"

# Two groups, one unallocable, whose nodes are then moved into the other
# (the text files of hspace -S, with node and group names rewritten).
froot="$T/simu-rebal-orig"
"$HSPACE" --simu u,4,8T,64g,16 --simu p,4,8T,64g,16 \
  -S "$froot" --disk-template drbd -l 8 >/dev/null 2>&1
for suffix in standard tiered; do
  sed -re 's/^(node-.*|fake-uuid-)-02(|.*)/\1-01\2/' \
    <"$froot.$suffix" >"$T/simu-rebal-merged.$suffix"
done

# The node evacuation request in each mode, without spindles.
for mode in primary-only secondary-only all; do
  sed -e 's/"evac_mode": "all"/"evac_mode": "'"$mode"'"/' \
    -e 's/"spindles": [0-9]\+,//' \
    <"$TESTDATA_DIR/hail-node-evac.json" >"$T/hail-node-evac.json.$mode"
done

# Requests with exclusive storage on, with and without the disks' spindles.
for base in hail-alloc-drbd hail-alloc-invalid-twodisks hail-alloc-twodisks \
  hail-change-group hail-node-evac hail-reloc-drbd hail-alloc-spindles; do
  f=$base.json
  sed -e 's/"exclusive_storage": false/"exclusive_storage": true/' \
    <"$TESTDATA_DIR/$f" >"$T/$f.excl-stor"
  sed -e 's/"exclusive_storage": false/"exclusive_storage": true/' \
    -e 's/"spindles": [0-9]\+,//' \
    <"$TESTDATA_DIR/$f" >"$T/$f.fail-excl-stor"
done
