# quorumlock — common tasks. `make test` is the one command CI runs.

GO ?= go

.PHONY: test deps vet demo

# Installs redis-server (and faketime) when missing, then runs every test
# against real masters with the race detector.
test: deps vet
	$(GO) test -race -count=1 -timeout 20m ./...

deps:
	@./scripts/deps.sh

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { gofmt -l .; echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...

# The embedded demo: five in-process nodes, no server to install.
demo:
	$(GO) run ./cmd/quorumlock demo
