package redlocktest

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// relisten bounds how long Restart tries to listen on a master's address
// again, in case a connection of the killed process still holds it.
const relisten = 2 * time.Second

// A master is one master at a fixed loopback address. Its listener and
// process come and go with Kill and Restart; Freeze and SetLatency act on
// the connections of whatever process runs.
type master struct {
	addr string
	op   sync.Mutex // serializes faults (kill, up, freeze, thaw, stop)

	mu      sync.Mutex
	ln      net.Listener  // nil while killed
	proc    *process      // nil while killed
	frozen  chan struct{} // non-nil while frozen; closed by thaw
	latency time.Duration
	stopped bool // the Cluster closed: never up again

	accepts sync.WaitGroup // the accept loop of ln
}

// startMaster starts a master listening on addr ("127.0.0.1:0" picks a
// free port), which stays its address.
func startMaster(addr string) (*master, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("redlocktest: listen on %s: %w", addr, err)
	}
	m := &master{addr: ln.Addr().String()}
	if err := m.run(ln); err != nil {
		return nil, err
	}
	return m, nil
}

// up listens on the master's address again and starts a new process
// there. The caller holds m.op, and the master is killed.
func (m *master) up() error {
	ln, err := listen(m.addr)
	if err != nil {
		return err
	}
	return m.run(ln)
}

// run starts a new process and serves it on ln; it closes ln on failure.
func (m *master) run(ln net.Listener) error {
	p, err := startProcess()
	if err != nil {
		ln.Close()
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		ln.Close()
		p.stop()
		return errors.New("the cluster is closed")
	}
	m.ln, m.proc = ln, p
	m.accepts.Add(1)
	go m.serve(ln, p)
	return nil
}

// listen listens on addr, retrying for a while if it is in use.
func listen(addr string) (net.Listener, error) {
	deadline := time.Now().Add(relisten)
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil || !errors.Is(err, syscall.EADDRINUSE) || time.Now().After(deadline) {
			if err != nil {
				return nil, fmt.Errorf("listen on %s: %w", addr, err)
			}
			return ln, nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// serve hands every connection ln accepts to p, until ln is closed.
func (m *master) serve(ln net.Listener, p *process) {
	defer m.accepts.Done()
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		p.serve(newConn(nc, m))
	}
}

// kill closes the listener, then ends the process and its connections. The
// caller holds m.op.
func (m *master) kill() {
	m.mu.Lock()
	ln, p := m.ln, m.proc
	m.ln, m.proc = nil, nil
	m.mu.Unlock()
	if ln == nil {
		return
	}
	ln.Close()
	m.accepts.Wait() // no connection is handed to p after this
	p.stop()
	// Only now: a connection released from a freeze before its process
	// ended could still have been answered.
	m.thaw()
}

// stop kills the master for good: a later Restart cannot bring it back.
func (m *master) stop() {
	m.op.Lock()
	defer m.op.Unlock()
	m.mu.Lock()
	m.stopped = true
	m.mu.Unlock()
	m.kill()
}

func (m *master) freeze() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.proc != nil && m.frozen == nil {
		m.frozen = make(chan struct{})
	}
}

func (m *master) thaw() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.frozen != nil {
		close(m.frozen)
		m.frozen = nil
	}
}

// gate returns a channel closed when the master thaws, or nil if it is not
// frozen.
func (m *master) gate() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.frozen
}

func (m *master) setLatency(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.latency = d
}

func (m *master) delay() time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.latency
}
