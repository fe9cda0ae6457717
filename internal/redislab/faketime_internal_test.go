package redislab

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// faketimeArgv returns a faketime command that sleeps, skipping t when
// faketime is not installed (failing it when CI=true: unavailable).
func faketimeArgv(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("faketime"); err != nil {
		unavailable(t, "faketime not on PATH (Debian: apt-get install -y faketime)")
	}
	return []string{"faketime", "-f", "+0 x2", "sleep", "60"}
}

func shmObjects(pid int) []string {
	var out []string
	for _, prefix := range faketimePrefixes {
		out = append(out, filepath.Join(shmDir, prefix+strconv.Itoa(pid)))
	}
	return out
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}

// A faketime killed with SIGKILL, as Kill and the lab's end kill it, leaves
// no semaphore or shared memory named after its PID: a later faketime given
// that PID would fail to start ("sem_open: File exists").
func TestKilledFaketimeLeavesNoObjects(t *testing.T) {
	argv := faketimeArgv(t)
	dir := t.TempDir()
	p, err := spawn(argv, dir, filepath.Join(dir, "log"))
	if err != nil {
		t.Fatalf("spawn faketime: %v", err)
	}
	pid := p.cmd.Process.Pid
	objects := shmObjects(pid)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := waitFor(ctx, "faketime makes "+objects[0], func() (bool, error) { return exists(objects[0]), nil }); err != nil {
		_ = p.kill()
		t.Fatalf("faketime (pid %d): %v", pid, err)
	}
	if err := p.kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	for _, o := range objects {
		if exists(o) {
			t.Errorf("%s left after faketime was killed", o)
		}
	}
}

// Before it starts a faketime, the lab removes the objects of one that no
// longer runs: here a PID just reaped.
func TestStaleFaketimeObjectsSwept(t *testing.T) {
	argv := faketimeArgv(t)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatalf("true: %v", err)
	}
	stale := shmObjects(gone.Process.Pid)
	for _, o := range stale {
		if err := os.WriteFile(o, nil, 0o600); err != nil {
			t.Fatalf("make a stale %s: %v", o, err)
		}
		t.Cleanup(func() { _ = os.Remove(o) })
	}
	dir := t.TempDir()
	p, err := spawn(argv, dir, filepath.Join(dir, "log"))
	if err != nil {
		t.Fatalf("spawn faketime: %v", err)
	}
	defer func() { _ = p.kill() }()
	for _, o := range stale {
		if exists(o) {
			t.Errorf("%s of a faketime no longer running left in place", o)
		}
	}
}
