// otelredlock's tests, benchmarks and example (package otelredlock_test,
// test files only): they read what the observer recorded through the
// OpenTelemetry SDK, so they are a module of their own, and otelredlock's
// go.mod names the OpenTelemetry API only — a user's module graph never
// lists the SDK for it.
module github.com/seed818c56a1/quorumlock/redlock/otelredlock/internal/sdktest

go 1.26.0

// The modules under test, from this checkout.
replace (
	github.com/seed818c56a1/quorumlock => ../../../..
	github.com/seed818c56a1/quorumlock/redlock/otelredlock => ../..
)

require (
	github.com/redis/go-redis/v9 v9.23.0
	github.com/seed818c56a1/quorumlock v0.0.0-00010101000000-000000000000
	github.com/seed818c56a1/quorumlock/redlock/otelredlock v0.0.0-00010101000000-000000000000
	go.opentelemetry.io/otel v1.47.0
	go.opentelemetry.io/otel/sdk v1.47.0
	go.opentelemetry.io/otel/sdk/metric v1.47.0
	go.opentelemetry.io/otel/trace v1.47.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
