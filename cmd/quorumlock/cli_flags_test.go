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
		{[]string{"run", "--nodes", "a:1", "--", "true"}, "--key or --keys is required"},
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--keys", "a,b", "--", "true"}, "--key and --keys exclude each other"},
		{[]string{"run", "--nodes", "a:1", "--keys", "a,b", "--read", "--", "true"}, "--read holds one key: give --key, not --keys"},
		{[]string{"run", "--nodes", "a:1", "--keys", "a,b", "--limit", "2", "--", "true"}, "--limit counts the holders of one name: give --key, not --keys"},
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--read", "--limit", "2", "--", "true"}, "--read and --limit exclude each other"},
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--limit", "0", "--", "true"}, "--limit 0 must be in [1, 1024]"},
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--limit", "-3", "--", "true"}, "--limit -3 must be in [1, 1024]"},
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--limit", "1025", "--", "true"}, "--limit 1025 must be in [1, 1024]"},
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--limit", "two", "--", "true"}, `invalid value "two" for flag -limit`},
		{[]string{"run", "--nodes", "a:1", "--keys", "", "--", "true"}, `--keys "": empty key`},
		{[]string{"run", "--nodes", "a:1", "--keys", "a,,b", "--", "true"}, `--keys "a,,b": empty key`},
		{[]string{"run", "--nodes", "a:1", "--keys", "a,b,a", "--", "true"}, `--keys "a,b,a": key "a" given twice`},
		{[]string{"run", "--nodes", "a:1", "--keys", "a,b"}, "no command to run"},
		{[]string{"run", "--nodes", "a:1", "--read=maybe", "--key", "k", "--", "true"}, `invalid boolean value "maybe" for -read`},
		{[]string{"run", "--nodes", "a:1", "--key", "k"}, "no command to run"},
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--ttl", "0s", "--", "true"}, "--ttl 0s must be positive"},
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--wait", "-1s", "--", "true"}, "--wait -1s must not be negative"},
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--ttl", "ten", "--", "true"}, `invalid value "ten" for flag -ttl`},
		// Beyond redlock.MaxDuration a deadline derived from the flag overflows.
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--wait", "2562047h47m16.8s", "--", "true"}, "--wait 2562047h47m16.8s must be at most 8760h0m0s"},
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--grace", "8761h", "--", "true"}, "--grace 8761h0m0s must be at most 8760h0m0s"},
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--restart-guard", "8761h", "--", "true"}, "--restart-guard 8761h0m0s must be at most 8760h0m0s"},
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--ttl", "4381h", "--", "true"}, "--ttl 4381h0m0s must be at most 4380h0m0s"},
		{[]string{"status", "--nodes", "a:1", "--key", "k", "--timeout", "8761h"}, "--timeout 8761h0m0s must be at most 8760h0m0s"},
		{[]string{"run", "--nodes", "a:1,a:1", "--key", "k", "--", "true"}, "same master"},
		{[]string{"run", "--nodes", "a:1", "--key", "k", "--ttl", "10ms", "--", "true"}, "too short"},
		{[]string{"run", "--nodes", "redis://a:b:c", "--key", "k", "--", "true"}, `bad node address "redis://a:b:c"`},
		{[]string{"status", "--nodes", "a:1"}, "--key is required"},
		{[]string{"status", "--nodes", "a:1", "--key", "k", "extra"}, `unexpected argument "extra"`},
		{[]string{"status", "--nodes", "a:1", "--key", "k", "--timeout", "0s"}, "--timeout 0s must be positive"},
		{[]string{"status", "--nodes", "a:1", "--key", "k", "--limit", "0"}, "--limit 0 must be in [1, 1024]"},
		{[]string{"status", "--nodes", "a:1", "--key", "k", "--limit", "1025"}, "--limit 1025 must be in [1, 1024]"},
		{[]string{"status", "--nodes", "a:1", "--limit", "2"}, "--key is required"},
		// What the library refuses to read (redlock.Inspect), as run refuses to lock it.
		{[]string{"status", "--nodes", "a:1", "--key", "k", "--prefix", "a{b"}, `prefix "a{b" contains a brace`},
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
		{[]string{"run", "-h"}, []string{"-- CMD", "-ttl duration", "-wait duration", "-grace duration", "77", "75", "Examples:",
			"-keys names", "-read", "-limit N", "QUORUMLOCK_TOKENS", "QUORUMLOCK_PERMIT", "--keys stock-east,stock-west", "--read --wait", "--limit 4"}},
		{[]string{"help", "status"}, []string{"-json", "-timeout duration", "-limit N", "69", "Examples:", "--key schema --json", "--limit 4"}},
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
