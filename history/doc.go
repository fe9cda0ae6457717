// Package history records what happened to locks during a run — who held
// which key when, with which fencing token, which faults hit which node,
// which fenced writes were refused — as a JSON Lines file, and draws such a
// file as one self-contained HTML page (Render): a lane per node with its
// faults as shaded bands, a lane per key with each hold a bar from grant to
// release or loss, coloured by client and labelled with its token, the
// stretch from a loss signal to Until drawn faint, overlaps and refused
// stale writes in red, details on hover. The page has no script and loads
// nothing: it opens offline.
//
// Services record their own holds with an Observer (redlock.WithObserver);
// the chaos tests and `quorumlock demo --report` write the same format, and
// `quorumlock report history.jsonl > run.html` draws any of them.
//
// # The file format
//
// One JSON object per line (blank lines are skipped, unknown fields
// ignored). Every record has "type" and "time"; times are RFC 3339 instants
// with nanoseconds, and the picture shows them as offsets from the earliest
// one. Fields a type does not use are left out.
//
//	type     fields           meaning
//	run      time, end,       the run: its start and end, its name (the
//	         title, nodes     page's heading) and its nodes, a lane each
//	grant    time, client,    client obtained key with token at time; until is
//	         key, token,      the end of validity (Lock.Until) then; shared
//	         until, shared    marks a reader's hold (RLock), which may overlap
//	                          other readers
//	release  time, client,    the hold of client, key and token ended by its
//	         key, token,      holder (Unlock) at time; until as then
//	         until
//	loss     time, client,    the hold ended by a loss signal (Done closed
//	         key, token,      with ErrLockLost, or ErrClosed: its Client
//	         until, note      closed, as a crashing holder's) seen at time; the
//	                          lease may still be on the nodes until until
//	fault    time, end,       a fault on node (every node when empty) from
//	         node, fault,     time to end (healed); fault is its kind: kill,
//	         note             restart-empty, restart, freeze, latency,
//	                          partition, clock-skew, or any other word
//	write    time, client,    a write to the resource guarded by key, with
//	         key, token,      token, sent at time; refused marks a write the
//	         refused, seen    store refused as stale, seen the larger token
//	                          it had already accepted
//
// Every record may carry "note", free text shown on hover. A release or
// loss ends the earliest open grant of the same client, key and token; a
// grant never ended is drawn to the end of the history, outlined dashed.
// Two holds of a key whose [grant, end) intersect, unless both are shared,
// are an overlap.
//
// An example:
//
//	{"type":"run","time":"2026-11-26T12:00:00Z","title":"checkout","nodes":["10.0.0.1:6379","10.0.0.2:6379","10.0.0.3:6379"]}
//	{"type":"grant","time":"2026-11-26T12:00:00.010Z","until":"2026-11-26T12:00:09.905Z","client":"worker-1","key":"stock","token":41}
//	{"type":"fault","time":"2026-11-26T12:00:01Z","end":"2026-11-26T12:00:04Z","node":"10.0.0.2:6379","fault":"kill"}
//	{"type":"release","time":"2026-11-26T12:00:02.500Z","until":"2026-11-26T12:00:09.905Z","client":"worker-1","key":"stock","token":41}
//	{"type":"write","time":"2026-11-26T12:00:03Z","client":"worker-2","key":"stock","token":40,"refused":true,"seen":41}
//
// Times of one process compare exactly when they are taken from one clock
// (the Observer's are time.Now and Lock.Until); records of several
// processes are as comparable as their wall clocks.
package history
