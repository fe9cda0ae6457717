// Package bench measures quorumlock side by side with the raw fan-out floor,
// go-redsync/redsync v4 and bsm/redislock, on one five-node lab of real
// redis-server processes on loopback. It is its own module, so that the
// peers never become dependencies of the library; everything is in tests.
//
// One table, every case and library measured in the same run:
//
//	make bench                       # from the repository root, or:
//	cd bench && go test -run '^TestSideBySide$' -v -count=1 -timeout 20m . -args -bench.dur=2s
//
// Allocations and time per cycle of each library alone:
//
//	cd bench && go test -run '^$' -bench Cycle -benchmem .
//
// docs/BENCH.md has a run, the machine it ran on, and what limits each figure.
package bench
