package master

import "errors"

// The errors of this package that package redlock returns as its own: it
// re-exports each variable (redlock.ErrReplica is ErrReplica), so that
// errors.Is matches either name. Their contracts are stated there.
var (
	// ErrClosed is the error of a call to a cluster node after Node.Cut or
	// Node.Close: the Client is closed.
	ErrClosed = errors.New("redlock: client closed")

	// ErrStartUnknown is Learn's error for a server that could not say when
	// it started.
	ErrStartUnknown = errors.New("redlock: node cannot report when it started; grant not counted")

	// ErrReplica is the error of Vet, Learn, TrustStart and CheckNew for a
	// server that is a replica, not a master.
	ErrReplica = errors.New("redlock: node is a replica, not a master")
)
