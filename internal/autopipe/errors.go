package autopipe

import "errors"

// ErrClosed matches (errors.Is) the error of a command that was not sent
// because its Pipe was closed: Do after Close, or a command still queued
// when Close ran. That error matches ErrNotSent too.
var ErrClosed = errors.New("autopipe: pipe closed")

// ErrNotSent matches (errors.Is) the error of every command that never
// reached the server — nothing was written, so nothing needs undoing:
// commands refused by a closed Pipe (see ErrClosed), and commands whose ctx
// had ended before their batch was formed (their error then also matches
// ctx's error, such as context.DeadlineExceeded).
var ErrNotSent = errors.New("autopipe: command not sent")

// errNoArgs mirrors go-redis's answer to a Do without a command.
var errNoArgs = errors.New("autopipe: no command to send")

// notSentError is the error of a command that was never written.
type notSentError struct {
	cause error  // ErrClosed or a context's error
	why   string // the cause, without a second "autopipe:" prefix
}

// closedNotSent is shared by every command refused by a closed Pipe.
var closedNotSent error = &notSentError{cause: ErrClosed, why: "pipe closed"}

// notSent returns the error of a command skipped because ctx ended first.
func notSent(ctxErr error) error {
	return &notSentError{cause: ctxErr, why: ctxErr.Error()}
}

func (e *notSentError) Error() string { return "autopipe: command not sent: " + e.why }

func (e *notSentError) Is(target error) bool { return target == ErrNotSent }

func (e *notSentError) Unwrap() error { return e.cause }

// ErrAbandoned matches (errors.Is) the error Do and DoLate return when the
// caller's ctx ended before the command's outcome was known: the command
// may have run, and DoLate's late callback will report what happened. The
// error matches ctx's error too. Only this error promises a late callback:
// a command whose real outcome happens to be a context error (a batch that
// ran out of time) is not abandoned.
var ErrAbandoned = errors.New("autopipe: caller stopped waiting")

// abandonedError is the error of a call its caller stopped waiting for.
type abandonedError struct{ cause error }

func (e *abandonedError) Error() string {
	return "autopipe: caller stopped waiting: " + e.cause.Error()
}
func (e *abandonedError) Is(target error) bool { return target == ErrAbandoned }
func (e *abandonedError) Unwrap() error        { return e.cause }

// ErrSetup matches (errors.Is) the error of every command of a batch whose
// connection could not be set up: the server refused the handshake go-redis
// runs on a new connection — a wrong password (WRONGPASS), a DB the server
// does not have (SELECT's error). Nothing was written: the error matches
// ErrNotSent too, and wraps the server's answer, whose text it keeps.
var ErrSetup = errors.New("autopipe: connection not set up")

// setupError is the error of a command whose connection was not set up.
type setupError struct{ cause error }

func (e *setupError) Error() string { return "autopipe: connection not set up: " + e.cause.Error() }

func (e *setupError) Is(target error) bool { return target == ErrSetup || target == ErrNotSent }

func (e *setupError) Unwrap() error { return e.cause }
