package redlock

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/redlock/internal/master"
)

// Every script starts with prelude.lua, so Redis numbers its lines from
// the prelude's first; an error a script raises must still name the file
// and line it is in. acquire.lua given a TTL that is no number fails on
// the line that adds it to the time.
func TestScriptErrorNamesItsFileAndLine(t *testing.T) {
	lab := redislab.Start(t, 1)
	c, err := New(lab.Clients(t), WithAutoRenew(false), WithRestartGuard(0), WithNodeTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kss := newKeysets(c.cfg.prefix, []string{"k"})
	args := commonArgs(0, "owner-1", "hold-1", 0, c.cfg.retention, "", 0)
	args[argTTL] = "not-a-number"
	err = c.exec(ctx, 0, newScriptCall(acquireScript, kss.scriptKeys(5), args...)).Err()
	want := fmt.Sprintf("acquire.lua:%d", lineOf(t, acquireSrc, "local ends = server_ms(t) + tonumber(ttl)"))
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "user_script") {
		t.Fatalf("acquire.lua with a TTL that is no number: %v; want an error naming %s", err, want)
	}
	t.Logf("%v", err)
}

// lineOf returns the 1-based line of src that contains code.
func lineOf(t *testing.T, src, code string) int {
	t.Helper()
	for i, line := range strings.Split(src, "\n") {
		if strings.Contains(line, code) {
			return i + 1
		}
	}
	t.Fatalf("no line contains %q", code)
	return 0
}

// The restart argument's sigils are named alike on both sides: prelude.lua's
// locals, as a script that uses them gets them, hold callargs.go's
// constants. A cluster entry's LASTSAVE ends with no digit: the script reads
// the digits.
func TestRestartSigilsMatchPrelude(t *testing.T) {
	lab := redislab.Start(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := newScript("sigils.lua", "return {restart_off, restart_unknown, restart_record, restart_cluster, restart_id_end}")
	got, err := lab.Clients(t)[0].Eval(ctx, s.src, nil).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{master.RestartOff, master.RestartUnknown, master.RestartRecord, master.RestartCluster, master.RestartIDEnd}
	if !slices.Equal(got, want) {
		t.Errorf("prelude.lua's restart sigils = %q, want callargs.go's %q", got, want)
	}
	if strings.ContainsAny(master.RestartSavedEnd, "0123456789") {
		t.Errorf("master.RestartSavedEnd = %q: a digit, read as part of the LASTSAVE", master.RestartSavedEnd)
	}
}
