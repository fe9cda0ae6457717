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
// TestRenewalScale (also run by make bench) holds 10,000 renewed locks on
// one Client; TestScriptCost splits the servers' script time by script (INFO
// commandstats and a slowlog with threshold 0, one kind of operation at a
// time); TestScriptLadder prices each guarantee on one server:
//
//	cd bench && go test -run '^(TestScriptCost|TestScriptLadder)$' -v -count=1 .
//
// docs/BENCH.md has a run, the machine it ran on, and what limits each figure.
package bench
