package otelredlock

import (
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// flights maps a key to the recording acquire spans in flight for it, so
// that NodeFailed, which has no context, can find the span of a key's
// acquisition. NodeFailed for "lock" runs on the acquiring goroutine,
// between AcquireStart and AcquireDone, so a key with a single acquisition
// in flight names its span without doubt; with several (concurrent Lock
// calls on one key, or one observer shared by several Clients) it cannot
// tell which, and records no event. Only recording spans are kept: the
// no-op default never takes the lock.
type flights struct {
	mu sync.Mutex
	m  map[string][]*acquisition // pointers: spans need not be comparable
}

func (f *flights) add(key string, a *acquisition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.m == nil {
		f.m = make(map[string][]*acquisition)
	}
	f.m[key] = append(f.m[key], a)
}

func (f *flights) remove(key string, a *acquisition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	as := f.m[key]
	for i, x := range as {
		if x == a {
			as = append(as[:i], as[i+1:]...)
			break
		}
	}
	if len(as) == 0 {
		delete(f.m, key)
		return
	}
	f.m[key] = as
}

// only returns key's span if exactly one is in flight.
func (f *flights) only(key string) (trace.Span, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if as := f.m[key]; len(as) == 1 {
		return as[0].span, true
	}
	return nil, false
}
