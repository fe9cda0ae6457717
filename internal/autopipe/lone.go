package autopipe

import (
	"context"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
)

// WithLoneProcess has the Pipe write a batch of one command — a lone call,
// the common case when calls do not overlap — with the client's Process
// instead of a one-command pipeline: two allocations fewer per call (a
// PING: 10 → 8), and none of Pipeline.Exec's error work. It applies over a plain
// *redis.Client only (a ClusterClient or a Ring keeps its pipelines), and
// New then adds a hook to that client (see setupHook), so give the Pipe a
// client of its own, such as a WithTimeout clone: the hook is how a lone
// call still tells a connection the server refused to set up (ErrSetup)
// from an error reply to the command itself, which Process alone files
// alike.
//
// What a lone call does not mark ErrSetup: a set-up that failed for a
// reason other than the handshake's error reply — a credentials provider's
// error, a connection lost during the handshake, an error an OnConnect
// callback returns — is its plain error, as the same failure of the
// command would be. A batch of several commands, or one written after
// DoLateAfter's pre, still goes out as a pipeline.
func WithLoneProcess() Option { return func(p *Pipe) { p.lone = true } }

// loneClient returns the client lone calls are written on, with the hook
// added: rdb, when the Pipe was asked to (WithLoneProcess) and rdb is a
// plain *redis.Client; else nil.
func loneClient(rdb redis.UniversalClient, asked bool) *redis.Client {
	rc, ok := rdb.(*redis.Client)
	if !asked || !ok {
		return nil
	}
	rc.AddHook(setupHook{})
	return rc
}

// A setupProbe watches one lone call in flight (see processLone) for the
// handshake go-redis runs to set up a new connection for it — HELLO, AUTH,
// SELECT, CLIENT SETNAME, READONLY — and keeps the last error one of those
// commands got. The commands of a caller's OnConnect are not the
// handshake's: one may fail, be dropped, and leave the connection usable.
// Each sender has one probe, in its batch context.
type setupProbe struct {
	mu  sync.Mutex
	cmd redis.Cmder // the lone call's command; nil while none is in flight
	err error       // the last error of a handshake command during it
}

// handshake reports whether cmd is one go-redis sends to set up a
// connection.
func handshake(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "auth", "select", "client", "readonly":
		return true
	}
	return false
}

// probeKey is the context key under which a batch context holds its probe.
type probeKey struct{}

// saw files the error of the first handshake command among cmds, run
// under a lone call's context, that failed; err is what running them
// returned.
func (pr *setupProbe) saw(err error, cmds ...redis.Cmder) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.cmd == nil {
		return
	}
	for _, c := range cmds {
		if c == pr.cmd || !handshake(c) {
			continue
		}
		if e := c.Err(); e != nil {
			pr.err = e
			return
		}
		if len(cmds) == 1 && err != nil {
			pr.err = err
			return
		}
	}
}

// setupHook files in the probe of the batch context it runs under (if any)
// the errors of the commands that set up a lone call's connection: go-redis
// runs them through the client's hooks, under the call's context.
type setupHook struct{}

func (setupHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (setupHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if pr, ok := ctx.Value(probeKey{}).(*setupProbe); ok && err != nil {
			pr.saw(err, cmd)
		}
		return err
	}
}

func (setupHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if pr, ok := ctx.Value(probeKey{}).(*setupProbe); ok {
			pr.saw(err, cmds...)
		}
		return err
	}
}

// processLone writes cmd, b's only command, with Process on b's held
// connection or the lone client, and returns whether its error is the
// refused set-up of the connection, and the error: a Redis error reply that
// one of the set-up commands got, which go-redis returns as the command's.
// Such a command was not written; its error then matches ErrSetup, as a
// pipeline's unread commands do (unread).
func (p *Pipe) processLone(b *batch, cmd *redis.Cmd) (bool, error) {
	pr := &b.ctx.probe
	pr.mu.Lock()
	pr.cmd, pr.err = cmd, nil
	pr.mu.Unlock()
	var err error
	if b.conn != nil {
		err = b.conn.Process(b.ctx, cmd)
	} else {
		err = p.loneRdb.Process(b.ctx, cmd)
	}
	pr.mu.Lock()
	refused := pr.err
	pr.cmd, pr.err = nil, nil
	pr.mu.Unlock()
	var reply redis.Error
	if err == nil || refused == nil || !errors.As(refused, &reply) || !errors.Is(err, refused) {
		return false, err
	}
	cmd.SetErr(&setupError{cause: err})
	return true, err
}
