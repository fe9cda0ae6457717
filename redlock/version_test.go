package redlock_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// releaseHeading is a release's heading in CHANGELOG.md ("## [0.1.0] -
// 2026-11-25"); "## [Unreleased]" does not match.
var releaseHeading = regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$`)

// Version is the latest release that CHANGELOG.md lists.
func TestVersionIsTheChangelogsLatestRelease(t *testing.T) {
	log, err := os.ReadFile("../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	m := releaseHeading.FindSubmatch(log)
	if m == nil {
		t.Fatal("CHANGELOG.md: no release heading such as \"## [0.1.0] - 2026-11-25\"")
	}
	if got := string(m[1]); got != redlock.Version {
		t.Errorf("CHANGELOG.md's latest release is %s, redlock.Version is %s", got, redlock.Version)
	}
}
