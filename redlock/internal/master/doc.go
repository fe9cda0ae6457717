// Package master is the layer of quorumlock that talks to one master: a
// plain Redis server, a Redis Cluster, or a Sentinel master set, given as
// the caller's go-redis client.
//
// Its door is a Node: Call sends one script to the server that owns the
// script's keys' hash slot — through a dedicated client of the library's,
// built from the caller's options with bounded waits, and an automatic
// pipeline — and the start state of that server comes back through
// StartKeys and LastSaved (what the script reads and is told) and Learn
// (what its reply reported, filed per server). Around it: MemberIDs, which
// finds two members that are one cluster, and the vouch records of
// TrustStart and CheckNew.
//
// It knows nothing of locks, acquisitions or a Client's options: package
// redlock composes it. Its errors are re-exported there (errors.go).
package master
