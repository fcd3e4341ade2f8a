#!/usr/bin/env bash
# Installs what Drove's tests and benchmarks need on a fresh Debian machine:
# Ganeti's hail and hbal (the peer the planner is measured against), Ganeti's
# public test data (from Debian's ganeti-testsuite, unpacked into .cache, not
# installed: it would pull all of Ganeti), and PostgreSQL's server binaries.
# It is idempotent and quick when everything is already there.
# `deps.sh kafka` fetches Apache Kafka (and Java, if missing) only.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo

updated=""
apt_update() {
  [ -n "$updated" ] && return
  $sudo apt-get update -qq
  updated=1
}

# Apache Kafka for the tests, benchmarks and `make run-kafka`: the broker
# and its runtime dependencies, copied by Maven into .cache once, at the
# version deploy/apachekafka/pom.xml pins. Java 17 runs it (Kafka 4 needs
# 17 or later); Debian's JDK and Maven come with it where missing.
fetch_kafka() {
  kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$root/deploy/apachekafka/pom.xml")
  kafka_libs="$root/.cache/kafka-$kafka_version/libs"
  if [ ! -f "$kafka_libs/kafka_2.13-$kafka_version.jar" ]; then
    java_ok=""
    if command -v java >/dev/null; then
      v=$(java -XshowSettings:properties -version 2>&1 | sed -n 's/.*java.specification.version = //p')
      [ "${v%%.*}" -ge 17 ] 2>/dev/null && java_ok=1
    fi
    if [ -z "$java_ok" ] || ! command -v mvn >/dev/null; then
      echo "deps: installing Java 17 and Maven"
      apt_update
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq openjdk-17-jre-headless maven >/dev/null
    fi
    echo "deps: fetching Apache Kafka $kafka_version into $kafka_libs"
    tmp_libs="$kafka_libs.tmp.$$"
    rm -rf "$tmp_libs"
    mvn -q -B -f "$root/deploy/apachekafka/pom.xml" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$tmp_libs" >/dev/null
    rm -rf "$kafka_libs"
    mv "$tmp_libs" "$kafka_libs"
  fi
}

# `deps.sh kafka` fetches Apache Kafka only: what `make run-kafka` needs.
if [ "${1:-}" = kafka ]; then
  fetch_kafka
  exit 0
fi

packages=()
[ -x /usr/lib/ganeti/iallocators/hail ] && command -v hbal >/dev/null || packages+=(ganeti-htools)
command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1 || packages+=(docker-compose)
command -v qemu-system-x86_64 >/dev/null || packages+=(qemu-system-x86)
# executor/qemu/guestboot/build.sh assembles the test guest (TestGuestBootBuilt).
{ command -v as && command -v ld; } >/dev/null || packages+=(binutils)
command -v tmux >/dev/null || packages+=(tmux)
# test/hailsuite runs Ganeti's shell tests of hail with shelltestrunner.
command -v shelltest >/dev/null || packages+=(shelltestrunner)
# test/partition: network namespaces, veth pairs, a bridge and a firewall rule.
command -v ip >/dev/null || packages+=(iproute2)
command -v iptables >/dev/null || packages+=(iptables)
# Headless Chromium drives the web console's acceptance test (gateway/console).
command -v chromium >/dev/null || packages+=(chromium)
if ! command -v initdb >/dev/null && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  packages+=(postgresql)
fi
if [ ${#packages[@]} -gt 0 ]; then
  echo "deps: installing ${packages[*]}"
  apt_update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${packages[@]}" >/dev/null
fi

data="$root/.cache/ganeti"
if [ ! -f "$data/usr/share/ganeti/testsuite/test/data/htools/hail-node-evac.json" ]; then
  echo "deps: unpacking Ganeti's test data into $data"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && apt-get download ganeti-testsuite >/dev/null 2>&1) || { apt_update; (cd "$tmp" && apt-get download ganeti-testsuite >/dev/null); }
  mkdir -p "$data"
  dpkg-deb -x "$tmp"/ganeti-testsuite_*.deb "$data"
fi

# ZFS for the storage driver's tests: zfs-fuse gives real zfs and zpool
# (an old ZFS, pool version 23) over FUSE, with file-backed pools.
if ! command -v zfs-fuse >/dev/null || ! command -v zpool >/dev/null; then
  echo "deps: installing zfs-fuse"
  apt_update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq zfs-fuse >/dev/null
fi
# The daemon is started by test/zfsenv at first use, the tests' way (its
# flags, and its output kept for when it dies).

# schemathesis fuzzes the API from its OpenAPI document (test/e2e's
# TestAPIFuzzedBySchemathesis): a pinned version in a virtual environment
# of its own under .cache, so nothing of the system's Python changes.
schemathesis_version=4.32.5
venv="$root/.cache/schemathesis"
if [ "$("$venv/bin/schemathesis" --version 2>/dev/null)" != "schemathesis, version $schemathesis_version" ]; then
  if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    echo "deps: installing python3-venv"
    apt_update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv >/dev/null
  fi
  echo "deps: installing schemathesis $schemathesis_version into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "schemathesis==$schemathesis_version"
fi

fetch_kafka
