//go:build !linux

package main

import (
	"errors"
	"os"
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
