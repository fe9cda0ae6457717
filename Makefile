# quorumlock — common tasks. `make test` is the one command CI runs.

GO ?= go

# Every module of the repository: each directory with a go.mod. The library
# (the root module) requires only what a user's program needs; the CLI, the
# OpenTelemetry observer, its SDK-reading tests, the container lab and the
# benchmarks are modules of their own, so that their dependencies never
# enter a user's module graph. go.work ties them together for editors and
# `go run ./cmd/quorumlock`; the targets below build each module on its own
# go.mod (GOWORK=off), as its users do.
MODULES := $(sort $(patsubst %/go.mod,%,$(shell find . -name go.mod -not -path './.git/*')))
# bench's tests are measurements of minutes (make bench); make test builds,
# vets and lints them but does not run them.
TEST_MODULES := $(filter-out ./bench,$(MODULES))

# staticcheck, pinned, installed from the Go module proxy into .bin/.
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK := $(CURDIR)/.bin/staticcheck-$(STATICCHECK_VERSION)

.PHONY: test unit deps vet demo lab lab-engine

# The one command CI runs (.ci/run): installs what the tests need when it is
# missing (scripts/deps.sh), checks (vet), starts the Docker engine and
# builds the lab's images (lab-engine: lab/'s container tests run against
# them), runs every test of every module (unit), then the five-node Docker
# lab end to end (lab).
test: deps vet lab-engine unit
	@$(MAKE) --no-print-directory lab

# Every test of every module against real masters with the race detector,
# one package at a time (each starts its own masters; two cores are shared
# by all of them). Needs no Docker: lab/'s container tests skip without an
# engine (fail with CI=true).
unit: deps
	@status=0; for m in $(TEST_MODULES); do \
		echo "== go test $$m"; \
		(cd $$m && GOWORK=off $(GO) test -race -count=1 -p 1 -timeout 20m ./...) || status=1; \
	done; exit $$status

deps:
	@./scripts/deps.sh

# gofmt; the docs' checks (scripts/doclen -check: package docs within their
# bounds, no exported comment pointing at the package doc, every name of
# docs/ARCHITECTURE.md existing); then per module: go.mod tidy, go vet and
# staticcheck; and go.work names every module.
vet: $(STATICCHECK)
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	@GOWORK=off $(GO) run ./scripts/doclen -check
	@for m in $(MODULES); do grep -qE "^[[:space:]]*(use[[:space:]]+)?$$m\$$" go.work || { echo "go.work: module $$m missing (go work use $$m)"; exit 1; }; done
	@status=0; for m in $(MODULES); do \
		echo "== vet $$m"; \
		(cd $$m && GOWORK=off $(GO) mod tidy -diff && GOWORK=off $(GO) vet ./... && GOWORK=off $(STATICCHECK) ./...) || status=1; \
	done; exit $$status

$(STATICCHECK):
	@mkdir -p $(CURDIR)/.bin
	GOBIN=$(CURDIR)/.bin GOWORK=off $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	@mv $(CURDIR)/.bin/staticcheck $@

# The embedded demo: five in-process nodes, no server to install.
demo:
	$(GO) run ./cmd/quorumlock demo

# The five-node Docker lab, from nothing to a verdict (lab/run.sh): installs
# docker.io, a compose and debootstrap when missing, starts dockerd when no
# engine answers, builds the images docker-compose.yml pins when absent
# (lab/images.sh: Debian's mirror and the Go module proxy, no registry), runs
# lab/'s tests against the engine, brings the lab up, waits for health,
# vouches for the masters, runs the chaos scenario through compose (a master
# killed mid-lease, another brought back empty, a latency, a blackhole) and
# prints the checker's verdict; `down -v` whatever happens.
lab:
	@GO=$(GO) ./lab/run.sh

# Only the engine and the images: what lab/'s container tests need.
lab-engine:
	@GO=$(GO) ./lab/run.sh engine

# Side-by-side benchmarks of bench/ (its own module, so the peers never enter
# this go.mod): starts five masters and prints one table (about 90 s), then
# holds 10,000 renewed locks on one Client for 30 s (TestRenewalScale).
# Flags go through BENCH_FLAGS, e.g. make bench BENCH_FLAGS='-bench.dur=6s'.
.PHONY: bench
bench: deps
	cd bench && $(GO) test -run '^(TestSideBySide|TestRenewalScale|TestManyKeysCost)$$' -v -count=1 -timeout 20m . -args $(BENCH_FLAGS)

# Chaos soak: random faults (crashes, restarts, paused masters, a majority
# down, latency, blackholes, lost replies, partitions, a semaphore split over
# a master restarted empty) from a seeded RNG under contention, every hold
# checked for overlaps; prints the per-fault table of docs/CHAOS.md. Then the
# same for members that are 3-shard Redis Clusters (TestShardSoak, as long
# again, with replicas and stale replicas promoted by TAKEOVER, every other
# time then rotating their replication IDs; SOAK_TAKEOVER=0 leaves both
# out). SOAK_ONLY=text keeps the faults whose name contains text. E.g. make
# chaos SOAK_DUR=10m SOAK_SEED=7. TestSoak draws its run — every hold, fault
# and refused stale write — on SOAK_REPORT (one HTML file, offline), its
# history beside it (.jsonl; `quorumlock report` draws it again), and both
# paths are printed, whether the soak passed or not.
SOAK_DUR ?= 5m
SOAK_SEED ?= 1
SOAK_REPORT ?= $(CURDIR)/chaos-report.html
.PHONY: chaos
chaos: deps
	@status=0; $(GO) test -race -count=1 -timeout 2h -run '^(TestSoak|TestShardSoak)$$' -v ./chaos -soak.dur=$(SOAK_DUR) -soak.seed=$(SOAK_SEED) \
		-soak.report=$(SOAK_REPORT) || status=$$?; \
	echo "report: $(SOAK_REPORT) (history $(basename $(SOAK_REPORT)).jsonl)"; exit $$status
