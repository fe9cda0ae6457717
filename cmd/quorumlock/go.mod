module github.com/seed818c56a1/quorumlock/cmd/quorumlock

go 1.26.0

// The root module, from this checkout. A release tags the root module and
// this one (cmd/quorumlock/vX.Y.Z) and requires the tagged root instead, so
// that `go install github.com/seed818c56a1/quorumlock/cmd/quorumlock@version`
// works (go install refuses a module with replace directives).
replace github.com/seed818c56a1/quorumlock => ../..

// The demo's embedded nodes, from this checkout too (a release requires the
// tagged redlock/redlocktest module instead).
replace github.com/seed818c56a1/quorumlock/redlock/redlocktest => ../../redlock/redlocktest

require (
	github.com/redis/go-redis/v9 v9.23.0
	github.com/seed818c56a1/quorumlock v0.0.0-00010101000000-000000000000
	github.com/seed818c56a1/quorumlock/redlock/redlocktest v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.25.0
)

require (
	github.com/alicebob/miniredis/v2 v2.40.0 // indirect
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
