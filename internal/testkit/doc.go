// Package testkit holds the helpers that the tests of several packages
// share: a context bound to a test, a wait on a condition with a deadline, a
// buffer written and read concurrently, a closer opened and closed with the
// test, and probes of what the lock keys and channels hold on a node.
//
// It is imported by _test files only. It imports no package of this module,
// so that the tests of any package may use it, in-package tests of redlock
// included: what it needs of the library (a constructor, a key's names) it
// takes as arguments.
package testkit
