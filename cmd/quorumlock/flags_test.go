package main

import (
	"strings"
	"testing"
)

func TestBadInvocations(t *testing.T) {
	cases := []struct {
		args []string
		want string // in stderr
	}{
		{nil, "Usage:"},
		{[]string{"frobnicate"}, `unknown subcommand "frobnicate"`},
		{[]string{"help", "frobnicate"}, `unknown subcommand "frobnicate"`},
		{[]string{"run", "--bogus"}, "quorumlock run: flag provided but not defined: -bogus"},
		{[]string{"run", "--key", "k", "--", "true"}, "no nodes: set --nodes or $QUORUMLOCK_NODES"},
		{[]string{"run", "--nodes", "a:1", "--", "true"}, "--key is required"},
		{[]string{"run", "--nodes", "a:1", "--key", "k"}, "no command to run"},
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--ttl", "0s", "--", "true"}, "--ttl 0s must be positive"},
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--wait", "-1s", "--", "true"}, "--wait -1s must not be negative"},
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--ttl", "ten", "--", "true"}, `invalid value "ten" for flag -ttl`},
		{[]string{"run", "--nodes", "a:1,a:1", "--key", "k", "--", "true"}, "same master"},
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--ttl", "10ms", "--", "true"}, "too short"},
		{[]string{"run", "--nodes", "redis://a:b:c", "--key", "k", "--", "true"}, `bad node address "redis://a:b:c"`},
		{[]string{"status", "--nodes", "a:1"}, "--key is required"},
		{[]string{"status", "--nodes", "a:1", "--key", "k", "extra"}, `unexpected argument "extra"`},
		{[]string{"status", "--nodes", "a:1", "--key", "k", "--timeout", "0s"}, "--timeout 0s must be positive"},
		{[]string{"demo", "--workers", "0"}, "--workers 0 must be at least 1"},
		{[]string{"demo", "--duration", "soon"}, `invalid value "soon" for flag -duration`},
		{[]string{"demo", "--stock", "-1"}, "--stock -1 must not be negative"},
		{[]string{"demo", "--nodes", "a:1,a:1"}, "same master"},
		{[]string{"demo", "--ttl", "20ms"}, "too short"},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := inProcess(tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) || stdout != "" {
				t.Errorf("status %d, stderr %q, stdout %q; want %d, stderr with %q, no stdout",
					code, stderr, stdout, exitUsage, tc.want)
			}
		})
	}
}

func TestBadFlagInBinary(t *testing.T) {
	code, _, stderr := runBinary(t, "", "status", "--jsn")
	if code != exitUsage || !strings.Contains(stderr, "flag provided but not defined: -jsn") ||
		!strings.Contains(stderr, "Run 'quorumlock status -h' for usage.") {
		t.Errorf("status %d, stderr %q; want %d and the bad flag", code, stderr, exitUsage)
	}
}

func TestHelp(t *testing.T) {
	cases := []struct {
		args []string
		want []string // in stdout
	}{
		{[]string{"help"}, []string{"Usage:", "run ", "status ", "demo ", "QUORUMLOCK_NODES"}},
		{[]string{"--help"}, []string{"Usage:", "Examples:"}},
		{[]string{"run", "-h"}, []string{"-- CMD", "-ttl duration", "-wait duration", "-grace duration", "77", "75", "Examples:"}},
		{[]string{"help", "status"}, []string{"-json", "-timeout duration", "69", "Examples:"}},
		{[]string{"demo", "--help"}, []string{"-workers int", "-stock int", "-duration duration", "oversold", "Examples:"}},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := inProcess(tc.args...)
			if code != exitOK || stderr != "" {
				t.Errorf("status %d, stderr %q; want 0 and no stderr", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("usage lacks %q:\n%s", w, stdout)
				}
			}
			if strings.Contains(stdout, flagsMarker) {
				t.Errorf("usage still has %s", flagsMarker)
			}
		})
	}
}
