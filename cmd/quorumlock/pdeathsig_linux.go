package main

import "syscall"

// setParentDeathSignal makes Linux kill CMD if quorumlock dies (even of
// SIGKILL): its renewals stop then, so CMD must not run on.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
