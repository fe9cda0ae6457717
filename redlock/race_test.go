//go:build race

package redlock_test

// raceEnabled reports a -race build, in which more values escape to the
// heap: allocation budgets allow for it.
const raceEnabled = true
