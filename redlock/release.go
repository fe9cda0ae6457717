package redlock

import (
	"context"

	"github.com/seed818c56a1/quorumlock/quorum"
)

// A releaseKind says what release.lua is asked to do.
type releaseKind int

const (
	unlockLock releaseKind = iota // Unlock: delete the lock, announce it to the waiters
	unlockHold                    // Unlock of a reentrant hold: drop it; announce if that frees the lock
	undoHold                      // a failed attempt: drop its hold, silently — its own waiter would wake
)

// release undoes a holding on every node, in parallel, each call under the
// node timeout, detached from ctx's cancellation. token, when positive, is
// raised onto every answering node's counter.
func (c *Client) release(ctx context.Context, cfg *config, ks *keyset, id identity, kind releaseKind, token int64) quorum.Tally[int64] {
	r := round[int64](c, cfg)
	r.Decided = func(t *quorum.Tally[int64]) bool { return t.Won() || t.Count(quorum.Refused) >= t.Need }
	return r.Run(context.WithoutCancel(ctx), func(ctx context.Context, n int) quorum.Vote[int64] {
		return releaseVote(c.releaseOn(ctx, n, ks, id, kind, token))
	})
}

// undo drops a failed attempt's hold on every node that did not refuse it
// (a refusal proves the key holds another owner's value, so ours is not
// there). Pending and failed nodes are included: their write may have landed.
func (c *Client) undo(ctx context.Context, cfg *config, ks *keyset, id identity, t *quorum.Tally[int64]) {
	r := round[int64](c, cfg)
	r.Decided = func(*quorum.Tally[int64]) bool { return false }
	r.Run(context.WithoutCancel(ctx), func(ctx context.Context, n int) quorum.Vote[int64] {
		if t.Votes[n].Outcome == quorum.Refused {
			return quorum.Vote[int64]{Outcome: quorum.Refused}
		}
		return releaseVote(c.releaseOn(ctx, n, ks, id, undoHold, 0))
	})
}

// releaseOn runs release.lua on node n.
func (c *Client) releaseOn(ctx context.Context, n int, ks *keyset, id identity, kind releaseKind, token int64) (int64, error) {
	mode, channel := "0", ""
	switch kind {
	case unlockLock:
		mode, channel = "1", ks.channel
	case unlockHold:
		channel = ks.channel
	}
	return c.run(ctx, n, releaseScript, []string{ks.lock, ks.fence, ks.queue}, id.owner, id.hold, mode, channel, token).Int64()
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

// leave removes id's owner from the key's waiters' queue on every node.
func (c *Client) leave(ctx context.Context, cfg *config, ks *keyset, id identity) {
	r := round[struct{}](c, cfg)
	r.Decided = func(*quorum.Tally[struct{}]) bool { return false }
	r.Run(context.WithoutCancel(ctx), func(ctx context.Context, n int) quorum.Vote[struct{}] {
		if err := c.run(ctx, n, leaveScript, []string{ks.queue, ks.leases, ks.lock}, id.owner, ks.channel).Err(); err != nil {
			return quorum.Vote[struct{}]{Outcome: quorum.Failed, Err: err}
		}
		return quorum.Vote[struct{}]{Outcome: quorum.Granted}
	})
}
