#!/usr/bin/env bash
# make lab: from nothing to a verdict on the five-node Docker lab.
#
#   1. installs what is missing (docker.io, a compose, debootstrap) with apt;
#   2. starts dockerd when no engine answers (no systemd needed);
#   3. builds the images docker-compose.yml pins when they are absent
#      (lab/images.sh: Debian's packages and the Go module proxy only);
#   4. runs lab/'s tests against the engine (the compose file's promises,
#      the testcontainers-go masters);
#   5. brings the compose lab up, waits until all six services are healthy,
#      and vouches for the new masters (quorumlock trust, a built binary);
#   6. runs the chaos scenario through compose (lab/scenario_test.go);
#   7. tears the lab down with its volumes (down -v), whatever happened.
#
# Usage: lab/run.sh [engine]   — "engine" stops after step 3 (make lab-engine).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
GO=${GO:-go}
PROJECT=quorumlock # the compose project: volumes are quorumlock_redisN-data
NODES=127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003,127.0.0.1:7004,127.0.0.1:7005
HEALTH_TIMEOUT=${LAB_HEALTH_TIMEOUT:-120}

step() { echo "== lab [${SECONDS}s]: $*"; }
die() { echo "lab: FAIL: $*" >&2; exit 1; }

install_missing() {
	local missing=()
	command -v docker >/dev/null 2>&1 || missing+=(docker.io)
	docker compose version >/dev/null 2>&1 || command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
	command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
	[ ${#missing[@]} -eq 0 ] && return 0
	local sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	step "installing ${missing[*]}"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

start_engine() {
	docker info >/dev/null 2>&1 && return 0
	step "no Docker engine answers: starting dockerd (log: /var/log/dockerd.log)"
	local sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo sh -c 'nohup dockerd >/var/log/dockerd.log 2>&1 &'
	for _ in $(seq 60); do
		docker info >/dev/null 2>&1 && return 0
		sleep 1
	done
	tail -20 /var/log/dockerd.log >&2 || true
	die "dockerd did not answer within 60 s"
}

# compose runs Compose v2 (docker compose) where it is, else v1.
compose() {
	if docker compose version >/dev/null 2>&1; then
		docker compose -p "$PROJECT" -f "$root/docker-compose.yml" "$@"
	else
		docker-compose -p "$PROJECT" -f "$root/docker-compose.yml" "$@"
	fi
}

# wait_healthy polls every service's container until all six are healthy:
# never trusting `up` (v1's `up -d --wait` exits 0 having started nothing).
wait_healthy() {
	local want ids states
	want=$(compose config --services | wc -l)
	[ "$want" -eq 6 ] || die "compose names $want services, want 6"
	for _ in $(seq "$HEALTH_TIMEOUT"); do
		ids=$(compose ps -q)
		if [ "$(echo "$ids" | grep -c .)" -eq "$want" ]; then
			states=$(docker inspect -f '{{.Name}} {{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}' $ids)
			if ! echo "$states" | grep -qv ' running healthy$'; then
				echo "$states" | sed 's/^/  /'
				return 0
			fi
		fi
		sleep 1
	done
	compose ps >&2 || true
	compose logs --tail=20 >&2 || true
	die "the lab was not healthy within ${HEALTH_TIMEOUT} s"
}

install_missing
start_engine
step "images"
if [ "$(id -u)" -eq 0 ]; then ./lab/images.sh; else sudo --preserve-env=PATH,GOPATH,GOMODCACHE,GOCACHE,HOME ./lab/images.sh; fi
[ "${1:-}" = engine ] && exit 0

if docker compose version >/dev/null 2>&1; then
	export LAB_COMPOSE="docker compose"
else
	export LAB_COMPOSE="docker-compose"
fi
export LAB_PROJECT=$PROJECT LAB_COMPOSE_FILE=$root/docker-compose.yml
step "compose: $($LAB_COMPOSE version --short 2>/dev/null || $LAB_COMPOSE version | head -1)"

bin=$(mktemp -d /tmp/quorumlock-lab.XXXXXX)
teardown() {
	local rc=$?
	step "down -v"
	compose down -v --remove-orphans >/dev/null 2>&1 || echo "lab: down -v failed" >&2
	rm -rf "$bin"
	[ $rc -eq 0 ] && step PASS || step "FAIL (exit $rc)" >&2
	exit $rc
}
trap teardown EXIT
trap 'exit 130' INT TERM

step "building quorumlock"
(cd cmd/quorumlock && GOWORK=off $GO build -o "$bin/quorumlock" .)

step "lab/ tests against the engine (compose file, testcontainers-go)"
(cd lab && GOWORK=off $GO test -count=1 -p 1 ./...)

compose down -v --remove-orphans >/dev/null 2>&1 || true # a lab left behind
step "up"
compose up -d
wait_healthy
step "trust"
"$bin/quorumlock" trust --nodes "$NODES"

step "chaos scenario through compose"
report=${LAB_REPORT:-$PWD/lab-report.html}
status=0
(cd lab && LAB_SCENARIO=1 LAB_REPORT="$report" QUORUMLOCK_BIN="$bin/quorumlock" GOWORK=off \
	$GO test -count=1 -run '^TestComposeChaos$' -v -timeout 10m .) || status=$?
echo "report: $report (history ${report%.*}.jsonl)"
exit $status
