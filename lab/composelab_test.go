package lab_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// composeLab drives the running compose lab that lab/run.sh (make lab)
// brought up: the compose command (v1 or v2), its project and its file
// come from LAB_COMPOSE, LAB_PROJECT and LAB_COMPOSE_FILE.
type composeLab struct {
	t       *testing.T
	cmd     []string // "docker compose" or "docker-compose"
	project string
	file    string
}

func newComposeLab(t *testing.T) *composeLab {
	t.Helper()
	cmd := strings.Fields(os.Getenv("LAB_COMPOSE"))
	project, file := os.Getenv("LAB_PROJECT"), os.Getenv("LAB_COMPOSE_FILE")
	if len(cmd) == 0 || project == "" || file == "" {
		t.Fatal("LAB_COMPOSE, LAB_PROJECT and LAB_COMPOSE_FILE must name the running lab: run make lab")
	}
	return &composeLab{t: t, cmd: cmd, project: project, file: file}
}

// run runs one compose subcommand and fails the test if it fails.
func (l *composeLab) run(args ...string) string {
	l.t.Helper()
	out, err := l.try(args...)
	if err != nil {
		l.t.Fatalf("%s %s: %v\n%s", strings.Join(l.cmd, " "), strings.Join(args, " "), err, out)
	}
	return out
}

func (l *composeLab) try(args ...string) (string, error) {
	argv := append(append(l.cmd[1:len(l.cmd):len(l.cmd)], "-p", l.project, "-f", l.file), args...)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, l.cmd[0], argv...).CombinedOutput()
	return string(out), err
}

// toxic runs toxiproxy-cli inside the lab's proxy container.
func (l *composeLab) toxic(args ...string) {
	l.t.Helper()
	l.run(append([]string{"exec", "-T", "toxiproxy", "/toxiproxy-cli"}, args...)...)
}

// volume is the name compose gives a volume of the file.
func (l *composeLab) volume(name string) string { return l.project + "_" + name }

// waitHealthy waits until service's container reports healthy.
func (l *composeLab) waitHealthy(service string, within time.Duration) {
	l.t.Helper()
	deadline := time.Now().Add(within)
	for {
		id := strings.TrimSpace(l.run("ps", "-q", service))
		if id != "" {
			out, err := exec.Command("docker", "inspect", "-f", "{{.State.Health.Status}}", id).CombinedOutput()
			if err == nil && strings.TrimSpace(string(out)) == "healthy" {
				return
			}
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("%s not healthy within %v", service, within)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// withNode runs f on a client of the master at addr, failing t on error.
func withNode(t *testing.T, addr string, f func(context.Context, *redis.Client) error) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f(ctx, rdb); err != nil {
		t.Fatalf("%s: %v", addr, err)
	}
}

// pingTime returns how long a PING through addr took, or the error after
// at most limit.
func pingTime(addr string, limit time.Duration) (time.Duration, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: limit, ReadTimeout: limit, MaxRetries: -1})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil { // the connection, first
		return 0, err
	}
	start := time.Now()
	err := rdb.Ping(ctx).Err()
	return time.Since(start), err
}

// nodes returns n 127.0.0.1 addresses from port up.
func nodes(port, n int) []string {
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", port+i)
	}
	return addrs
}
