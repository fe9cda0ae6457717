package lab

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
	"golang.org/x/sync/errgroup"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
)

// Image is the Redis image of the lab's masters, as docker-compose.yml pins
// it (lab/compose_test.go checks that they agree): the version tested.
const Image = "redis:7.0.15"

// ImageEnv names the environment variable that, when set, replaces Image as
// the image StartContainers runs (a local build, a mirror's copy).
const ImageEnv = "QUORUMLOCK_LAB_IMAGE"

// Container settings: the config path of docker-compose.yml.
const (
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
	noReaper()
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

// noReaper turns off testcontainers-go's reaper (Ryuk), whose image is
// pulled from a registry at the first container — unless the environment
// says otherwise. Without it, StartContainers' t.Cleanup is what removes the
// containers: a test binary killed outright leaves them behind.
func noReaper() {
	if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !set {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
}

// labImage is the image StartContainers runs: $QUORUMLOCK_LAB_IMAGE, or Image.
func labImage() string {
	if v := os.Getenv(ImageEnv); v != "" {
		return v
	}
	return Image
}

// unavailable stops t for want of the engine or the image: it fails t in CI
// (CI=true), where the engine is part of the job, and skips it elsewhere.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// StartContainers starts n containers of labImage() with the test lab's
// redis.conf (redislab.Conf) in parallel, each publishing its Redis port on
// 127.0.0.1 only, terminated in t.Cleanup, and returns the 127.0.0.1 address
// of each once it answers. With no Docker engine reachable or no such image
// on it (none is pulled), it skips t — fails it when CI=true. It fails t
// when a container does not start: the start waits for every container and
// stops at the first failure (errgroup).
func StartContainers(t testing.TB, n int) []string {
	t.Helper()
	if !DockerReachable() {
		unavailable(t, "lab: no Docker engine reachable (DOCKER_HOST or a docker.sock that answers)")
	}
	img := labImage()
	if err := imagePresent(img); err != nil {
		unavailable(t, "lab: image %s not on the engine (build it with lab/images.sh, or pull it; $%s names another): %v", img, ImageEnv, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerTimeout)
	defer cancel()
	ctrs := make([]*testcontainers.DockerContainer, n)
	addrs := make([]string, n)
	g, ctx := errgroup.WithContext(ctx)
	for i := range n {
		g.Go(func() (err error) {
			ctrs[i], addrs[i], err = runContainer(ctx, img)
			return err
		})
	}
	err := g.Wait()
	for _, c := range ctrs {
		testcontainers.CleanupContainer(t, c)
	}
	if err != nil {
		t.Fatalf("lab: starting %s containers: %v", img, err)
	}
	return addrs
}

// imagePresent reports an error unless img is on the engine already.
func imagePresent(img string) (err error) {
	defer recoverTo(&err)
	p, err := testcontainers.NewDockerProvider()
	if err != nil {
		return err
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), dockerCheckTimeout)
	defer cancel()
	_, err = p.Client().ImageInspect(ctx, img)
	return err
}

// recoverTo turns a panic of testcontainers-go (it panics on some broken
// set-ups) into *err.
func recoverTo(err *error) {
	if r := recover(); r != nil {
		*err = fmt.Errorf("lab: testcontainers-go panicked: %v", r)
	}
}

// runContainer starts one container of img with the lab's redis.conf and
// returns the 127.0.0.1 address of its Redis port once it answers PING.
func runContainer(ctx context.Context, img string) (c *testcontainers.DockerContainer, addr string, err error) {
	defer recoverTo(&err)
	c, err = testcontainers.Run(ctx, img,
		testcontainers.WithFiles(testcontainers.ContainerFile{
			Reader:            strings.NewReader(redislab.Conf),
			ContainerFilePath: containerConf,
			FileMode:          0o644,
		}),
		testcontainers.WithExposedPorts(redisPort),
		testcontainers.WithHostConfigModifier(publishOnLoopback),
		testcontainers.WithCmd("redis-server", containerConf),
		testcontainers.WithWaitStrategy(wait.ForLog("Ready to accept connections")),
	)
	if err != nil {
		return c, "", err
	}
	port, err := c.MappedPort(ctx, redisPort)
	if err != nil {
		return c, "", fmt.Errorf("lab: port of container: %w", err)
	}
	addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port.Num())))
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	return c, addr, rdb.Ping(ctx).Err()
}

// publishOnLoopback publishes the Redis port on 127.0.0.1 only, on a port
// the engine picks: never on every interface of the host.
func publishOnLoopback(hc *container.HostConfig) {
	hc.PortBindings = network.PortMap{
		network.MustParsePort(redisPort): {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: "0"}},
	}
}
