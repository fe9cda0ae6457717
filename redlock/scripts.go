package redlock

import (
	_ "embed"
)

var (
	//go:embed prelude.lua
	preludeSrc string
	//go:embed acquire.lua
	acquireSrc string
	//go:embed racquire.lua
	racquireSrc string
	//go:embed permit.lua
	permitSrc string
	//go:embed extend.lua
	extendSrc string
	//go:embed release.lua
	releaseSrc string
	//go:embed rrelease.lua
	rreleaseSrc string
	//go:embed fence.lua
	fenceSrc string
	//go:embed leave.lua
	leaveSrc string
	//go:embed lead.lua
	leadSrc string
	//go:embed leader.lua
	leaderSrc string

	acquireScript  = newScript("acquire.lua", acquireSrc)
	racquireScript = newScript("racquire.lua", racquireSrc)
	permitScript   = newScript("permit.lua", permitSrc)
	extendScript   = newScript("extend.lua", extendSrc)
	releaseScript  = newScript("release.lua", releaseSrc)
	rreleaseScript = newScript("rrelease.lua", rreleaseSrc)
	fenceScript    = newScript("fence.lua", fenceSrc)
	leaveScript    = newScript("leave.lua", leaveSrc)
	leadScript     = newScript("lead.lua", leadSrc)
	leaderScript   = newScript("leader.lua", leaderSrc)
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

// The first element of a granting reply of acquire.lua (racquire.lua and
// permit.lua grant with grantedCounter): whether every token came from the
// node's clock (fence.go: coverWindow).
const (
	grantedCounter = 1 // some token is a counter's value
	grantedClock   = 2 // every token is the node's clock in µs
)
