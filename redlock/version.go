package redlock

// Version is the release of this module, in semantic versioning: the
// latest release of CHANGELOG.md, which a test keeps in step. The
// quorumlock command reports it with `quorumlock version`.
const Version = "0.1.0"
