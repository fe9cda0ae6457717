package redlocktest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
)

// A process is one life of a master, from its start to its kill: a
// miniredis server with the identity a redis-server process has — a
// run_id of its own, and its start, from which its uptime and LASTSAVE
// come.
type process struct {
	srv     *miniredis.Miniredis
	runID   string
	started time.Time

	conns sync.WaitGroup // the delivery goroutines of its connections

	mu    sync.Mutex
	multi map[*server.Peer]bool // connections inside MULTI
}

// startProcess starts a new, empty process. miniredis listens on a port of
// its own, which nothing uses: the master hands it its connections.
func startProcess() (*process, error) {
	srv := miniredis.NewMiniRedis()
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("redlocktest: start miniredis: %w", err)
	}
	// TTLs run on the real clock, as a server's do (by default miniredis
	// moves them only on FastForward).
	srv.ClockTTL(true)
	p := &process{srv: srv, runID: newRunID(), started: time.Now(), multi: map[*server.Peer]bool{}}
	srv.Server().SetPreHook(p.hook)
	return p, nil
}

// newRunID returns 40 random hex digits, as redis-server's run_id.
func newRunID() string {
	b := make([]byte, 20)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// serve serves one accepted connection.
func (p *process) serve(c *conn) {
	p.conns.Add(1)
	go func() {
		defer p.conns.Done()
		c.deliver()
	}()
	p.srv.Server().ServeConn(c)
}

// stop ends the process: miniredis closes every connection and waits for
// their goroutines, then the deliveries end.
func (p *process) stop() {
	p.srv.Close()
	p.conns.Wait()
}

// uptime is the process's uptime_in_seconds: whole seconds since its start.
func (p *process) uptime() int64 { return int64(time.Since(p.started) / time.Second) }

// lastSave is its LASTSAVE: redis-server sets it to the time it started,
// until its first save.
func (p *process) lastSave() int64 { return p.started.Unix() }

// connClosed is returned by a conn's Read and Write once it is closed.
var connClosed = net.ErrClosed
