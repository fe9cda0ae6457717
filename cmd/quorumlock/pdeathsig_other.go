//go:build !linux

package main

import "syscall"

// setParentDeathSignal does nothing where the system has no parent-death
// signal: there CMD outlives a quorumlock that was killed.
func setParentDeathSignal(*syscall.SysProcAttr) {}
