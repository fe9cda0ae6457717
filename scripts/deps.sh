#!/usr/bin/env bash
# Installs what the tests need on a Debian machine when it is missing:
# redis-server (the real masters of the test lab), faketime (the chaos
# lab's fast-clock master) and postgresql (the server fence/sqlfence's tests
# start themselves) and chromium (the headless browser that opens the
# reports of package history in its tests). Go itself is expected to be
# installed.
set -euo pipefail
missing=()
# faketime (chaos: a master with a fast clock) hangs jemalloc, which Debian's
# redis-server uses; the chaos lab preloads tcmalloc instead.
ldconfig -p 2>/dev/null | grep -q libtcmalloc_minimal.so.4 || missing+=(libtcmalloc-minimal4)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v faketime >/dev/null 2>&1 || missing+=(faketime)
# Debian keeps initdb and pg_ctl off PATH, in /usr/lib/postgresql/<v>/bin.
command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
# The Debian packages may start system-wide servers (redis on 6379,
# postgresql on 5432); the tests start their own on free ports, so they are
# not needed.
