package redislab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

// Container settings: the image and the config path of docker-compose.yml.
const (
	image         = "redis:7"
	containerConf = "/usr/local/etc/redis/redis.conf"
	redisPort     = "6379/tcp"
)

// Time limits of the Docker path: the health check must never hold up a test
// run on a machine without Docker; a first image pull may take a while.
const (
	dockerCheckTimeout = 3 * time.Second
	containerTimeout   = 2 * time.Minute
)

// dockerReachable reports, once per test binary, whether a Docker engine
// answers. It asks the engine only when DOCKER_HOST is set or a known socket
// exists, and gives up after dockerCheckTimeout.
var dockerReachable = sync.OnceValue(func() bool {
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

// startContainers starts n redis:7 containers in parallel, terminated in
// t.Cleanup. Their nodes are not controllable.
func startContainers(t testing.TB, n int, cfg *config) *Lab {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
	defer cancel()
	ctrs := make([]*testcontainers.DockerContainer, n)
	addrs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { ctrs[i], addrs[i], errs[i] = runContainer(ctx, cfg.args) })
	}
	wg.Wait()
	for _, c := range ctrs {
		testcontainers.CleanupContainer(t, c)
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("redislab: starting %s containers: %v", image, err)
	}
	lab := &Lab{Nodes: make([]*Node, n)}
	for i, a := range addrs {
		lab.Nodes[i] = &Node{addr: a}
	}
	return lab
}

// runContainer starts one container with the lab's redis.conf and returns
// the host address of its Redis port once it answers PING.
func runContainer(ctx context.Context, args []string) (*testcontainers.DockerContainer, string, error) {
	c, err := testcontainers.Run(ctx, image,
		testcontainers.WithFiles(testcontainers.ContainerFile{
			Reader:            strings.NewReader(Conf),
			ContainerFilePath: containerConf,
			FileMode:          0o644,
		}),
		testcontainers.WithExposedPorts(redisPort),
		testcontainers.WithCmd(append([]string{"redis-server", containerConf}, args...)...),
		testcontainers.WithWaitStrategy(wait.ForLog("Ready to accept connections")),
	)
	if err != nil {
		return c, "", err
	}
	addr, err := c.PortEndpoint(ctx, redisPort, "")
	if err != nil {
		return c, "", fmt.Errorf("redislab: port of container: %w", err)
	}
	return c, addr, waitPing(addr, nil, startTimeout)
}
