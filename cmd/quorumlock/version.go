package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/redis/go-redis/v9"

	"github.com/seed818c56a1/quorumlock/redlock"
)

const versionUsage = `Usage: quorumlock version

Prints the release of quorumlock (redlock.Version), the module version the
binary was built from when it differs (as go install pkg@version records
it), the go-redis release and the Go toolchain.
`

// version prints what this binary is: quorumlock's release, then the
// versions it was built with.
func (c *cli) version(args []string) int {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
			fmt.Fprint(c.stdout, versionUsage)
			return exitOK
		}
		fmt.Fprintf(c.stderr, "quorumlock version: takes no arguments, got %q\n\n%s", args[0], versionUsage)
		return exitUsage
	}
	fmt.Fprintf(c.stdout, "quorumlock %s\n", redlock.Version)
	if info, ok := debug.ReadBuildInfo(); ok {
		if v := info.Main.Version; v != "" && v != "(devel)" && v != "v"+redlock.Version {
			fmt.Fprintf(c.stdout, "module %s %s\n", info.Main.Path, v)
		}
	}
	fmt.Fprintf(c.stdout, "go-redis %s\n%s %s/%s\n", redis.Version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}
