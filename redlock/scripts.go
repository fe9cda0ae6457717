package redlock

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
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

	acquireScript = newScript(acquireSrc)
	extendScript  = newScript(extendSrc)
	releaseScript = newScript(releaseSrc)
	fenceScript   = newScript(fenceSrc)
	leaveScript   = newScript(leaveSrc)
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
