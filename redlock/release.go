package redlock

import (
	"context"
	"errors"

	"github.com/seed818c56a1/quorumlock/quorum"
)

// A releaseKind says what release.lua is asked to do.
type releaseKind int

const (
	unlockLock releaseKind = iota // Unlock: delete the lock, announce it to the waiters
	unlockHold                    // Unlock of a reentrant hold: drop it; announce if that frees the lock
	undoHold                      // a failed attempt: drop its hold, silently — its own waiter would wake
)

// release undoes a holding of every key of kss on every node, in parallel,
// one call per node, each under the node timeout, detached from ctx's
// cancellation. tokens (one per key, or nil), when positive, are raised onto
// the counters of every answering node not marked in fenced (those already
// hold counters at least as large). Nodes marked in skip are left out: their
// acquire is still in flight, and its Late releases them.
func (c *Client) release(ctx context.Context, cfg *config, kss keysets, id identity, kind releaseKind, tokens []int64, fenced, skip []bool) quorum.Tally[int64] {
	r := round[int64](c, cfg)
	r.Decided = func(t *quorum.Tally[int64]) bool { return t.Won() || t.Count(quorum.Refused) >= t.Need }
	raise := releaseCall(cfg, kss, id, kind, tokens)
	plain := raise
	if fenced != nil {
		plain = releaseCall(cfg, kss, id, kind, nil)
	}
	return r.Run(context.WithoutCancel(ctx), func(ctx context.Context, n int) quorum.Vote[int64] {
		if skip != nil && skip[n] {
			return quorum.Vote[int64]{Outcome: quorum.Failed, Err: errInFlight}
		}
		sc := raise
		if fenced != nil && fenced[n] {
			sc = plain
		}
		return releaseVote(c.exec(ctx, n, sc).Int64())
	})
}

// undo drops a failed attempt's hold on every node that did not refuse it
// (a refusal proves the key holds another owner's value, so ours is not
// there) — failed nodes included: their write may have landed. A node whose
// call is still running is undone when it answers (the attempt's Late), so
// that the undo cannot land before the write.
func (c *Client) undo(ctx context.Context, cfg *config, kss keysets, id identity, t *quorum.Tally[[]int64]) {
	r := round[int64](c, cfg)
	r.Decided = func(*quorum.Tally[int64]) bool { return false }
	sc := releaseCall(cfg, kss, id, undoHold, nil)
	r.Run(context.WithoutCancel(ctx), func(ctx context.Context, n int) quorum.Vote[int64] {
		if t.Votes[n].Outcome == quorum.Refused || t.Abandoned(n) {
			return quorum.Vote[int64]{Outcome: quorum.Refused}
		}
		return releaseVote(c.exec(ctx, n, sc).Int64())
	})
}

// errInFlight is the vote, in an Unlock, of a node whose acquire call had
// not answered yet: it is released when that call returns.
var errInFlight = errors.New("redlock: acquire still in flight on this node; released when it answers")

// releaseOn runs release.lua on node n alone, for a late answer.
func (c *Client) releaseOn(ctx context.Context, cfg *config, n int, kss keysets, id identity, kind releaseKind, tokens []int64) {
	c.execAlone(ctx, n, releaseCall(cfg, kss, id, kind, tokens))
}

// releaseCall is release.lua's call for kind — rrelease.lua's for a reader;
// tokens are the counters to raise, one per key, or nil to raise none.
func releaseCall(cfg *config, kss keysets, id identity, kind releaseKind, tokens []int64) *scriptCall {
	if id.kind == reader {
		return rreleaseCall(cfg, kss[0], id, kind, tokens)
	}
	mode, announce := "0", ""
	switch kind {
	case unlockLock:
		mode, announce = "1", "1"
	case unlockHold:
		announce = "1"
	}
	args := make([]any, 0, 5+2*len(kss))
	args = append(args, id.owner, id.hold, mode, announce, cfg.retention.Milliseconds())
	for i := range kss {
		var token int64
		if tokens != nil {
			token = tokens[i]
		}
		args = append(args, token)
	}
	for _, k := range kss {
		args = append(args, k.Channel)
	}
	return newScriptCall(releaseScript, kss.lockKeys(), args...)
}

// rreleaseCall is rrelease.lua's call for a reader's holding of ks: an
// Unlock — of a reentrant owner's hold or not, since each reader is a hold
// of its own — or an undo.
func rreleaseCall(cfg *config, ks keyset, id identity, kind releaseKind, tokens []int64) *scriptCall {
	unlock := ""
	if kind != undoHold {
		unlock = "1"
	}
	var token int64
	if tokens != nil {
		token = tokens[0]
	}
	return newScriptCall(rreleaseScript, keysets{ks}.acquireKeys(), id.owner, id.hold, unlock, cfg.retention.Milliseconds(), token, ks.Channel)
}

func releaseVote(reply int64, err error) quorum.Vote[int64] {
	switch {
	case err != nil:
		return quorum.Vote[int64]{Outcome: quorum.Failed, Err: err}
	case reply == releaseNotOurs:
		return quorum.Vote[int64]{Outcome: quorum.Refused}
	}
	return quorum.Vote[int64]{Outcome: quorum.Granted, Value: reply}
}

// leaveOn removes id from the keys' waiters' queues on node n alone.
func (c *Client) leaveOn(ctx context.Context, n int, kss keysets, id identity) {
	c.execAlone(ctx, n, leaveCall(kss, id))
}

func leaveCall(kss keysets, id identity) *scriptCall {
	args := make([]any, 0, 1+len(kss))
	args = append(args, id.waiter())
	for _, k := range kss {
		args = append(args, k.Channel)
	}
	return newScriptCall(leaveScript, kss.leaveKeys(), args...)
}

// leave removes id from the keys' waiters' queues on every node.
func (c *Client) leave(ctx context.Context, cfg *config, kss keysets, id identity) {
	r := round[struct{}](c, cfg)
	r.Decided = func(*quorum.Tally[struct{}]) bool { return false }
	sc := leaveCall(kss, id)
	r.Run(context.WithoutCancel(ctx), func(ctx context.Context, n int) quorum.Vote[struct{}] {
		if err := c.exec(ctx, n, sc).Err(); err != nil {
			return quorum.Vote[struct{}]{Outcome: quorum.Failed, Err: err}
		}
		return quorum.Vote[struct{}]{Outcome: quorum.Granted}
	})
}
