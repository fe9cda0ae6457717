#!/usr/bin/env bash
# Installs what the tests need on a Debian machine when it is missing:
# redis-server (the real masters of the test lab) and faketime (the chaos
# lab's fast-clock master). Go itself is expected to be installed.
set -euo pipefail
missing=()
# faketime (chaos: a master with a fast clock) hangs jemalloc, which Debian's
# redis-server uses; the chaos lab preloads tcmalloc instead.
ldconfig -p 2>/dev/null | grep -q libtcmalloc_minimal.so.4 || missing+=(libtcmalloc-minimal4)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v faketime >/dev/null 2>&1 || missing+=(faketime)
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "installing: ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
# The Debian package may start a system-wide server on 6379; the tests start
# their own on free ports, so it is not needed.
