package redlock

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/seed818c56a1/quorumlock/internal/autopipe"
)

// refusedSetup reports whether err says that the node will not let the
// Client set up a usable connection until someone changes a setting — the
// client's or the server's — so that no wait mends it:
//
//   - the server refused the handshake of a new connection
//     (autopipe.ErrSetup): a wrong password (WRONGPASS), a DB it does not
//     have (SELECT: "DB index is out of range"), a user that may not run
//     HELLO; unless its answer is one a busy or starting server gives
//     (BUSY, LOADING, …), which heals;
//   - the server requires a password the client does not give (NOAUTH, or
//     the protocol error it answers an unauthenticated client's long
//     command with), or refuses the credentials (WRONGPASS), or the DB
//     (SELECT's error, as go-redis returns it for a single command);
//   - the TLS handshake failed on the certificates or the protocol: the
//     server's certificate is not trusted or not the host's, the server
//     rejected the client's (a TLS alert), or the server does not speak
//     TLS at all.
//
// The error a vote carries says which, in the server's or crypto/tls's own
// words.
func refusedSetup(err error) bool {
	var re redis.Error
	isReply := errors.As(err, &re)
	switch {
	case errors.Is(err, autopipe.ErrSetup):
		return !isReply || !transientReply(re)
	case isReply:
		return redis.HasErrorPrefix(re, "NOAUTH") || redis.HasErrorPrefix(re, "WRONGPASS") ||
			strings.Contains(re.Error(), unauthenticated) || strings.Contains(re.Error(), "DB index is out of range")
	}
	return badTLS(err)
}

// unauthenticated is how a server that requires a password answers a
// client that gave none and sent a long command (a script call) before
// authenticating; it closes the connection after it.
const unauthenticated = "Protocol error: unauthenticated"

// errNoPassword names what an unauthenticated protocol error means.
var errNoPassword = errors.New("NOAUTH: the server requires a password and the client gave none")

// explainSetup returns err, a call's error, with errNoPassword attached
// when it is the server's answer to a client that gave no password.
func explainSetup(err error) error {
	var re redis.Error
	if errors.As(err, &re) && strings.Contains(re.Error(), unauthenticated) {
		return fmt.Errorf("%w (%w)", errNoPassword, err)
	}
	return err
}

// transientReply reports whether re is an error reply that a server gives
// only for a while: busy with a script, loading its data, cut off from its
// master or its cluster.
func transientReply(re redis.Error) bool {
	for _, p := range []string{"BUSY", "LOADING", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN"} {
		if redis.HasErrorPrefix(re, p) {
			return true
		}
	}
	return false
}

// badTLS reports whether err is a TLS handshake's failure that lasts: a
// certificate not trusted, expired or not the host's, an alert of the
// server's (it refused the client's certificate, or the protocol version),
// or a first record that is not TLS (the server does not speak it).
func badTLS(err error) bool {
	var (
		verify   *tls.CertificateVerificationError
		header   tls.RecordHeaderError
		alert    tls.AlertError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
	)
	return errors.As(err, &verify) || errors.As(err, &header) || errors.As(err, &alert) ||
		errors.As(err, &unknown) || errors.As(err, &hostname) || errors.As(err, &invalid)
}
