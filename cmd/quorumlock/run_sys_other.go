//go:build !linux

package main

import (
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// keeperPath is the executable the keeper runs: this binary.
func keeperPath() (string, error) { return os.Executable() }

// setSubreaper does nothing where there are no child subreapers: orphans of
// CMD's group go to init, and the keeper polls the group alone.
func setSubreaper() {}

// setForeground is not supported here: runs are never interactive.
func setForeground(int, int) error { return errors.ErrUnsupported }

// controllingTerminal returns nil: runs here never take the terminal.
func controllingTerminal() (*os.File, bool) { return nil, false }

// foregroundOf is not supported here.
func foregroundOf(int) (int, error) { return 0, errors.ErrUnsupported }

// children returns nothing here: without a subreaper, the keeper's only
// child is CMD, which killing its group kills.
func children() []int { return nil }

// dieOf kills the calling process with sig through the Go runtime, which
// dies of SIGINT, SIGTERM and SIGHUP once they are reset (not of a SIGPIPE
// that was sent). It returns if sig did not kill.
func dieOf(sig syscall.Signal) {
	signal.Reset(sig)
	syscall.Kill(os.Getpid(), sig)
}
