module github.com/seed818c56a1/quorumlock/fence/sqlfence

go 1.26.0

// The root module, from this checkout: only the tests use it (the lab's
// redis-server masters and redlock, for the examples). A release requires
// the tagged root module instead.
replace github.com/seed818c56a1/quorumlock => ../..

require (
	github.com/jackc/pgx/v5 v5.12.0
	github.com/seed818c56a1/quorumlock v0.0.0-00010101000000-000000000000
	go.uber.org/goleak v1.3.0
)

require (
	github.com/cenkalti/backoff/v4 v4.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	github.com/redis/go-redis/v9 v9.23.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sync v0.25.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.41.0 // indirect
)
