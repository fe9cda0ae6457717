package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// logger returns the -v logger: text records on stderr.
func (c *cli) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// logf logs an event of run itself with -v.
func (c *cli) logf(format string, args ...any) {
	if c.verbose {
		c.logger().Info("quorumlock: " + fmt.Sprintf(format, args...))
	}
}

// A lockLog remembers the last failed renewal, so that a loss can say why,
// and with -v logs every successful renewal (redlock.WithLogger logs the
// failures).
type lockLog struct {
	redlock.NopObserver
	c *cli

	mu   sync.Mutex
	last error // the last renewal's error, nil after a successful one
}

// lockLog returns run's observer of its lock.
func (c *cli) lockLog() *lockLog {
	if c.log == nil {
		c.log = &lockLog{c: c}
	}
	return c.log
}

func (o *lockLog) Renewed(ctx context.Context, key string, err error) {
	o.mu.Lock()
	o.last = err
	o.mu.Unlock()
	if err == nil && o.c.verbose {
		o.c.logger().LogAttrs(ctx, slog.LevelInfo, "redlock: renewed", slog.String("key", key))
	}
}

// lossCause says why l was lost: its error, and the last renewal's, whose
// node errors name the masters that failed.
func (c *cli) lossCause(l *redlock.Lock) string {
	why := oneLine(l.Err())
	o := c.lockLog()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.last != nil && o.last.Error() != l.Err().Error() {
		why += "; last renewal: " + oneLine(o.last)
	}
	return why
}

// watchNodes, with -v, pings every node each interval while the lock is
// held and logs each change of a node's answer: the library's renewals stop
// waiting for a node once a majority renewed, so a master that died would
// otherwise go unmentioned until the lock is lost. It returns when ctx ends.
func (c *cli) watchNodes(ctx context.Context, ns *nodeSet, interval time.Duration) {
	down := make([]error, len(ns.clients))
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i, err := range ns.pings(ctx, min(interval, warmTimeout)) {
			switch {
			case ctx.Err() != nil:
				return
			case err != nil && down[i] == nil:
				c.logger().LogAttrs(ctx, slog.LevelWarn, "quorumlock: node not answering", slog.Int("node", i),
					slog.String("addr", redactAddr(ns.addrs[i])), slog.String("error", ns.redact(oneLine(err))))
			case err == nil && down[i] != nil:
				c.logger().LogAttrs(ctx, slog.LevelInfo, "quorumlock: node answering again", slog.Int("node", i),
					slog.String("addr", redactAddr(ns.addrs[i])))
			}
			down[i] = err
		}
	}
}
