package redlocktest

import (
	"fmt"
	"os"
	"strings"

	"github.com/alicebob/miniredis/v2/server"
)

// hook answers, ahead of miniredis, what a redis-server says of its process:
// LASTSAVE, ROLE, and INFO's server and replication sections (miniredis has
// none of them). miniredis runs the hook for every command, the redis.call of a
// script included, so the library's scripts read them as from a server. It
// returns true when it answered. Inside MULTI it answers nothing: the
// command is queued by miniredis, which does not know it.
func (p *process) hook(c *server.Peer, cmd string, args ...string) bool {
	switch cmd {
	case "MULTI":
		p.setMulti(c, true)
	case "EXEC", "DISCARD":
		p.setMulti(c, false)
	case "LASTSAVE":
		if len(args) == 0 && !p.inMulti(c) {
			c.WriteInt(int(p.lastSave()))
			return true
		}
	case "ROLE":
		if len(args) == 0 && !p.inMulti(c) {
			c.WriteLen(3) // a master with no replicas: master, offset 0, []
			c.WriteBulk("master")
			c.WriteInt(0)
			c.WriteLen(0)
			return true
		}
	case "INFO":
		if text, ok := p.info(args); ok && !p.inMulti(c) {
			c.WriteBulk(text)
			return true
		}
	}
	return false
}

// info returns INFO's reply for sections, unless one of them is unknown to
// it (then miniredis answers).
func (p *process) info(sections []string) (string, bool) {
	if len(sections) == 0 {
		sections = []string{"default"}
	}
	var b strings.Builder
	for _, s := range sections {
		switch strings.ToLower(s) {
		case "server":
			p.serverSection(&b)
		case "replication":
			replicationSection(&b)
		case "default", "all", "everything":
			p.serverSection(&b)
			replicationSection(&b)
		default:
			return "", false
		}
	}
	return b.String(), true
}

func (p *process) serverSection(b *strings.Builder) {
	fmt.Fprintf(b, "# Server\r\nredis_version:7.0.0\r\nredis_mode:standalone\r\nprocess_id:%d\r\nrun_id:%s\r\nuptime_in_seconds:%d\r\nuptime_in_days:%d\r\n\r\n",
		os.Getpid(), p.runID, p.uptime(), p.uptime()/86400)
}

func replicationSection(b *strings.Builder) {
	b.WriteString("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n\r\n")
}

// setMulti records whether c is inside MULTI; a connection's state goes
// with it. The hook runs on c's own goroutine, as OnDisconnect's callbacks
// do.
func (p *process) setMulti(c *server.Peer, in bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, known := p.multi[c]; !known {
		if !in {
			return
		}
		c.OnDisconnect(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			delete(p.multi, c)
		})
	}
	p.multi[c] = in
}

func (p *process) inMulti(c *server.Peer) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.multi[c]
}
