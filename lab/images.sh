#!/usr/bin/env bash
# Builds the two images docker-compose.yml pins, under the names it pins,
# when they are absent — with no registry but Debian's package mirror and
# the Go module proxy. Users with a registry may pull the real ones instead;
# this script leaves an image that is already there alone.
#
#   redis:7.0.15                     Debian bookworm's redis-server (7.0.15),
#                                    a minbase debootstrap, WORKDIR /data
#   ghcr.io/shopify/toxiproxy:2.9.0  toxiproxy's server and cli from the Go
#                                    module proxy, static, nothing else;
#                                    ENTRYPOINT /toxiproxy as the official one
#
# Needs root (debootstrap, chroot; lab/run.sh runs it through sudo when
# not root), docker, debootstrap and go. The two builds run
# at once. Set DEBIAN_MIRROR to use another mirror.
set -euo pipefail

REDIS_IMAGE=redis:7.0.15
REDIS_VERSION=7.0.15
TOXIPROXY_IMAGE=ghcr.io/shopify/toxiproxy:2.9.0
TOXIPROXY_VERSION=v2.9.0
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

work=$(mktemp -d /tmp/quorumlock-images.XXXXXX)
trap 'rm -rf "$work"' EXIT

have() { docker image inspect "$1" >/dev/null 2>&1; }

build_redis() {
	local fs=$work/redis
	echo "images: building $REDIS_IMAGE (debootstrap bookworm redis-server)"
	debootstrap --variant=minbase --include=redis-server bookworm "$fs" "$MIRROR" \
		>"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log"; return 1; }
	local v
	v=$(chroot "$fs" redis-server --version | sed -n 's/.* v=\([0-9.]*\) .*/\1/p')
	[ "$v" = "$REDIS_VERSION" ] || { echo "images: Debian's redis-server is $v, not $REDIS_VERSION"; return 1; }
	# What the image does not need: apt's lists and caches, docs, locales.
	rm -rf "$fs"/var/cache/apt/* "$fs"/var/lib/apt/lists/* "$fs"/usr/share/doc \
		"$fs"/usr/share/man "$fs"/usr/share/locale "$fs"/usr/share/info
	mkdir -p "$fs/data" "$fs/usr/local/etc/redis"
	tar -C "$fs" -c . | docker import \
		--change 'WORKDIR /data' \
		--change 'EXPOSE 6379' \
		--change 'CMD ["redis-server"]' \
		- "$REDIS_IMAGE" >/dev/null
}

build_toxiproxy() {
	local bin=$work/toxiproxy
	echo "images: building $TOXIPROXY_IMAGE (go install toxiproxy $TOXIPROXY_VERSION)"
	mkdir -p "$bin/root"
	GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 GOBIN=$bin \
		go install -trimpath -ldflags='-s -w' \
		"github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION" \
		"github.com/Shopify/toxiproxy/v2/cmd/cli@$TOXIPROXY_VERSION"
	cp "$bin/server" "$bin/root/toxiproxy"
	cp "$bin/cli" "$bin/root/toxiproxy-cli"
	tar -C "$bin/root" -c . | docker import \
		--change 'ENTRYPOINT ["/toxiproxy"]' \
		--change 'CMD ["-host=0.0.0.0"]' \
		--change 'EXPOSE 8474' \
		- "$TOXIPROXY_IMAGE" >/dev/null
}

pids=()
have "$REDIS_IMAGE" || { build_redis & pids+=($!); }
have "$TOXIPROXY_IMAGE" || { build_toxiproxy & pids+=($!); }
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
[ $status -eq 0 ] || { echo "images: build failed"; exit 1; }
for i in "$REDIS_IMAGE" "$TOXIPROXY_IMAGE"; do
	have "$i" || { echo "images: $i missing after the build"; exit 1; }
done
echo "images: $REDIS_IMAGE and $TOXIPROXY_IMAGE present"
