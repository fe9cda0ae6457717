module github.com/seed818c56a1/quorumlock

// The oldest Go that builds this module: go-redis v9.23.0 declares go
// 1.26.0 (the code itself uses Go 1.25 APIs such as sync.WaitGroup.Go).
// Everything a user does not need — the CLI, the OpenTelemetry observer, the
// container lab, the benchmarks — is a module of its own
// (docs/ARCHITECTURE.md, Modules), so that this file's requirements, tests'
// included, are all a user's module graph gets.
go 1.26.0

require (
	github.com/cenkalti/backoff/v4 v4.3.0
	github.com/redis/go-redis/v9 v9.23.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.25.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
