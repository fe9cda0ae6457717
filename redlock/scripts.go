package redlock

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
)

var (
	//go:embed start.lua
	startSrc string
	//go:embed line.lua
	lineSrc string
	//go:embed lease.lua
	leaseSrc string
	//go:embed acquire.lua
	acquireSrc string
	//go:embed extend.lua
	extendSrc string
	//go:embed release.lua
	releaseSrc string
	//go:embed fence.lua
	fenceSrc string
	//go:embed leave.lua
	leaveSrc string
	//go:embed permit.lua
	permitSrc string
	//go:embed racquire.lua
	racquireSrc string
	//go:embed rrelease.lua
	rreleaseSrc string

	// These may have to say when their node started, and read the
	// waiters' line or leases: start.lua's and line.lua's functions come
	// first in each. Every script that writes holds or fencing counters
	// has lease.lua's functions before its own — but fence.lua, which
	// raises counters a grant has just kept.
	acquireScript  = newScript(startSrc + lineSrc + leaseSrc + acquireSrc)
	racquireScript = newScript(startSrc + lineSrc + leaseSrc + racquireSrc)
	permitScript   = newScript(startSrc + lineSrc + leaseSrc + permitSrc)
	extendScript   = newScript(startSrc + lineSrc + leaseSrc + extendSrc)

	releaseScript  = newScript(leaseSrc + releaseSrc)
	rreleaseScript = newScript(leaseSrc + rreleaseSrc)
	fenceScript    = newScript(fenceSrc)
	leaveScript    = newScript(leaveSrc)
)

// Replies of extend.lua, per lock.
const (
	extendNotOurs  = 0
	extendDone     = 1
	extendRepaired = 2
)

// Replies of release.lua.
const (
	releaseNotOurs = 0
	releaseFreed   = 1
	releaseKept    = 2
)

// A script is a Lua script and its SHA1, the name EVALSHA knows it by.
type script struct{ src, sha string }

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}
