// Package lab holds the checks of the five-node lab that need containers:
// Redis masters started through testcontainers-go where a Docker engine is
// reachable. It is a module of its own (github.com/seed818c56a1/quorumlock/lab)
// so that testcontainers-go, the Docker client and what they bring never
// enter the root go.mod, and so never a user's module graph; the root
// module's tests start local redis-server processes (internal/redislab).
//
// The directory also holds toxiproxy.json, the proxy configuration of the
// repository's docker-compose.yml, and the test of that file
// (compose_test.go): loaded with compose-go, the loader Docker Compose uses,
// and checked against what README promises of it and against the test lab's
// redis.conf. It needs no Docker.
//
// make lab (run.sh) runs the whole compose lab: images built with no
// registry (images.sh), the lab up and healthy, and TestComposeChaos — the
// demo and recorded holders under faults applied through compose, one
// master at a time — then down -v.
package lab
