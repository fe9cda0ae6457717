package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
	"golang.org/x/sync/errgroup"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
)

// Image is the Redis image of the lab's masters, as docker-compose.yml pins
// it (lab/compose_test.go checks that they agree): the version tested.
const Image = "redis:7.0.15"

// Container settings: the image and the config path of docker-compose.yml.
const (
	image         = Image
	containerConf = "/usr/local/etc/redis/redis.conf"
	redisPort     = "6379/tcp"
)

// Time limits of the Docker path: the health check must never hold up a test
// run on a machine without Docker; a first image pull may take a while.
const (
	dockerCheckTimeout = 3 * time.Second
	containerTimeout   = 2 * time.Minute
)

// DockerReachable reports, once per test binary, whether a Docker engine
// answers. It asks the engine only when DOCKER_HOST is set or a known socket
// exists, and gives up after dockerCheckTimeout.
var DockerReachable = sync.OnceValue(func() bool {
	if os.Getenv("DOCKER_HOST") == "" && !dockerSocketExists() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), dockerCheckTimeout)
	defer cancel()
	healthy := make(chan bool, 1)
	go func() { healthy <- dockerHealthy(ctx) }()
	select {
	case ok := <-healthy:
		return ok
	case <-ctx.Done():
		return false
	}
})

func dockerSocketExists() bool {
	home, _ := os.UserHomeDir()
	for _, p := range []string{
		"/var/run/docker.sock",
		filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "docker.sock"),
		filepath.Join(home, ".docker", "run", "docker.sock"),
	} {
		if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return true
		}
	}
	return false
}

// dockerHealthy asks testcontainers-go's provider, which panics on some
// broken set-ups: a panic means no.
func dockerHealthy(ctx context.Context) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return false
	}
	return p.Health(ctx) == nil // Health closes the provider
}

// StartContainers starts n containers of Image with the test lab's redis.conf
// (redislab.Conf) in parallel, terminated in t.Cleanup, and returns the host
// address of each once it answers. It skips t when no Docker engine is
// reachable, and fails t when a container does not start: the start waits
// for every container and stops at the first failure (errgroup).
func StartContainers(t testing.TB, n int) []string {
	t.Helper()
	if !DockerReachable() {
		t.Skip("lab: no Docker engine reachable (DOCKER_HOST or a docker.sock)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
	defer cancel()
	ctrs := make([]*testcontainers.DockerContainer, n)
	addrs := make([]string, n)
	g, ctx := errgroup.WithContext(ctx)
	for i := range n {
		g.Go(func() (err error) {
			ctrs[i], addrs[i], err = runContainer(ctx)
			return err
		})
	}
	err := g.Wait()
	for _, c := range ctrs {
		testcontainers.CleanupContainer(t, c)
	}
	if err != nil {
		t.Fatalf("lab: starting %s containers: %v", image, err)
	}
	return addrs
}

// runContainer starts one container with the lab's redis.conf and returns
// the host address of its Redis port once it answers PING.
func runContainer(ctx context.Context) (*testcontainers.DockerContainer, string, error) {
	c, err := testcontainers.Run(ctx, image,
		testcontainers.WithFiles(testcontainers.ContainerFile{
			Reader:            strings.NewReader(redislab.Conf),
			ContainerFilePath: containerConf,
			FileMode:          0o644,
		}),
		testcontainers.WithExposedPorts(redisPort),
		testcontainers.WithCmd("redis-server", containerConf),
		testcontainers.WithWaitStrategy(wait.ForLog("Ready to accept connections")),
	)
	if err != nil {
		return c, "", err
	}
	addr, err := c.PortEndpoint(ctx, redisPort, "")
	if err != nil {
		return c, "", fmt.Errorf("lab: port of container: %w", err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	return c, addr, rdb.Ping(ctx).Err()
}
