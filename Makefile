# quorumlock — common tasks. `make test` is the one command CI runs.

GO ?= go

.PHONY: test deps vet demo

# Installs redis-server (and faketime) when missing, then runs every test
# against real masters with the race detector, one package at a time (each
# starts its own masters; two cores are shared by all of them).
test: deps vet
	$(GO) test -race -count=1 -p 1 -timeout 20m ./...

deps:
	@./scripts/deps.sh

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...

# The embedded demo: five in-process nodes, no server to install.
demo:
	$(GO) run ./cmd/quorumlock demo

# Side-by-side benchmarks of bench/ (its own module, so the peers never enter
# this go.mod): starts five masters and prints one table (about 90 s), then
# holds 10,000 renewed locks on one Client for 30 s (TestRenewalScale).
# Flags go through BENCH_FLAGS, e.g. make bench BENCH_FLAGS='-bench.dur=6s'.
.PHONY: bench
bench: deps
	cd bench && $(GO) test -run '^(TestSideBySide|TestRenewalScale|TestManyKeysCost)$$' -v -count=1 -timeout 20m . -args $(BENCH_FLAGS)

# Chaos soak: random faults (crashes, restarts, paused masters, a majority
# down, latency, blackholes, lost replies, partitions) from a seeded RNG under
# contention, every hold checked for overlaps; prints the per-fault table of
# docs/CHAOS.md. E.g. make chaos SOAK_DUR=10m SOAK_SEED=7.
SOAK_DUR ?= 5m
SOAK_SEED ?= 1
.PHONY: chaos
chaos: deps
	$(GO) test -race -count=1 -timeout 2h -run '^TestSoak$$' -v ./chaos -soak.dur=$(SOAK_DUR) -soak.seed=$(SOAK_SEED)
