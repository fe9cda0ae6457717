package history

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/seed818c56a1/quorumlock/redlock"
)

// An Observer records the holds of the locks a Client obtains: a grant
// record when a Lock is obtained, then a release record when it ends by
// Unlock, or a loss record when it ends otherwise (lost, or its Client
// closed). Give it to redlock.New, or to one call, with
// redlock.WithObserver. It is safe for concurrent use.
//
// Each obtained Lock is watched by a goroutine until it ends; Wait waits
// for those. Write errors go to the Writer (Writer.Err).
type Observer struct {
	redlock.NopObserver
	w      *Writer
	client string
	wg     *sync.WaitGroup
}

// NewObserver returns an Observer that writes to w, naming the holder
// client in every record.
func NewObserver(w *Writer, client string) *Observer {
	return &Observer{w: w, client: client, wg: &sync.WaitGroup{}}
}

// As returns an Observer that writes to the same Writer under another
// client name, and whose locks the original's Wait waits for too: one per
// worker of a shared Client, given to each call.
func (o *Observer) As(client string) *Observer {
	return &Observer{w: o.w, client: client, wg: o.wg}
}

// Wait waits until every Lock recorded so far has ended and its release or
// loss is written.
func (o *Observer) Wait() { o.wg.Wait() }

// AcquireDone writes a grant record for each key of an obtained Lock (a
// semaphore's as <name>#<permit>) and watches the Lock until it ends.
func (o *Observer) AcquireDone(_ context.Context, _ string, l *redlock.Lock, _ time.Duration, err error) {
	if err != nil || l == nil {
		return
	}
	now := time.Now()
	keys := o.keys(l)
	for _, k := range keys {
		o.w.Write(Record{Type: TypeGrant, Time: now, Client: o.client, Key: k.name, Token: k.token, Until: l.Until()})
	}
	o.wg.Go(func() {
		<-l.Done()
		rec := Record{Type: TypeRelease, Time: time.Now(), Client: o.client, Until: l.Until()}
		if cause := l.Err(); errors.Is(cause, redlock.ErrLockLost) || errors.Is(cause, redlock.ErrClosed) {
			rec.Type, rec.Note = TypeLoss, cause.Error()
		}
		for _, k := range keys {
			rec.Key, rec.Token = k.name, k.token
			o.w.Write(rec)
		}
	})
}

type keyToken struct {
	name  string
	token int64
}

func (o *Observer) keys(l *redlock.Lock) []keyToken {
	if p := l.Permit(); p >= 0 {
		return []keyToken{{fmt.Sprintf("%s#%d", l.Key(), p), l.Token()}}
	}
	var out []keyToken
	for _, k := range l.Keys() {
		out = append(out, keyToken{k, l.TokenOf(k)})
	}
	return out
}
