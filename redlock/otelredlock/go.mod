module github.com/seed818c56a1/quorumlock/redlock/otelredlock

go 1.26.0

// The root module, from this checkout (as go-redis's extra/ modules do).
replace github.com/seed818c56a1/quorumlock => ../..

require (
	github.com/redis/go-redis/v9 v9.23.0
	github.com/seed818c56a1/quorumlock v0.0.0-00010101000000-000000000000
	go.opentelemetry.io/otel v1.47.0
	go.opentelemetry.io/otel/metric v1.47.0
	go.opentelemetry.io/otel/trace v1.47.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)
