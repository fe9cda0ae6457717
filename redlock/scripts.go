package redlock

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

var (
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

	acquireScript = redis.NewScript(acquireSrc)
	extendScript  = redis.NewScript(extendSrc)
	releaseScript = redis.NewScript(releaseSrc)
	fenceScript   = redis.NewScript(fenceSrc)
	leaveScript   = redis.NewScript(leaveSrc)
)

// Replies of release.lua.
const (
	releaseNotOurs = 0
	releaseFreed   = 1
	releaseKept    = 2
)
