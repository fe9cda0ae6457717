package main

// runUsage is the text of quorumlock help run.
const runUsage = `Usage: quorumlock run --nodes host:port,... --key K [--read | --limit N] [flags] -- CMD [ARGS...]
       quorumlock run --nodes host:port,... --keys K1,K2,... [flags] -- CMD [ARGS...]

Acquire the lock K on a majority of the nodes, run CMD while the lock is
renewed every ttl/3, release the lock once CMD and every process of its
process group have exited, and exit with CMD's status: a distributed
flock(1). CMD inherits stdin, stdout and stderr, and runs in its own process
group with $QUORUMLOCK_KEY (K) and $QUORUMLOCK_TOKEN (the lock's fencing
token: pass it to stores that reject stale writers). CMD is looked up in
$PATH before the lock is taken; a file without "#!" runs through /bin/sh,
as execvp does.

Other kinds of hold:
  --keys K1,K2,...  every lock of the list at once, or none: never part of
                    them while waiting for the rest, so runs whose lists
                    overlap, in any order, do not deadlock. $QUORUMLOCK_KEY
                    is the list, $QUORUMLOCK_TOKEN the largest token, and
                    $QUORUMLOCK_TOKENS each key's token as K1=T1,K2=T2,...
                    in the order given (split at the commas, then at the
                    last '=').
  --read            a shared hold of K: runs with --read run together, but
                    never while a run without --read holds K.
  --limit N         one of N permits of K, a semaphore: at most N runs at
                    once; every run of K must give the same N.
                    $QUORUMLOCK_PERMIT is the permit held, in [0, N), and
                    $QUORUMLOCK_TOKEN that permit's token: fence per K and
                    permit.

The command's process group:
  The lock is held while any process of CMD's group lives: a background job
  that CMD leaves behind (sh -c 'job &') keeps it, as it keeps flock(1)'s,
  also after Ctrl-C (a non-interactive sh starts background jobs with
  SIGINT ignored). --kill-group sends what is left SIGTERM (SIGKILL after
  --grace) when CMD exits instead. A process that leaves the group — setsid,
  a daemon, another job-control shell's jobs — is not waited for: once the
  group has exited with the lock held to the end, it runs on unlocked; it
  is killed with the group when quorumlock dies, and after a lost lock
  even if the group exited within --grace.
  If quorumlock dies, however it dies (kill -9 too, or of its whole process
  group), the group is killed at once by its keeper (a copy of quorumlock,
  CMD's parent, in a process group of its own), and then every other process
  started under the run, in whatever process group, long before the lease
  can end: a quorumlock run inside CMD that dies with CMD's group takes its
  own command with it. Killing the keeper too, by its pid, leaves the group
  unguarded.

Signals and terminals:
  SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to quorumlock are forwarded to
  CMD's process group (continuing it if it is stopped). In an interactive
  run (quorumlock's group in the terminal's foreground) CMD's group gets the
  terminal, as a shell's job does: it reads from it, and Ctrl-C and Ctrl-Z
  reach it; quorumlock takes it back when CMD exits or stops. Once the lock is released, quorumlock dies of the signal CMD
  died of if that was SIGINT, SIGTERM, SIGHUP or SIGPIPE (so that a calling
  shell loop stops on Ctrl-C), and exits 128+N for any other signal N.
  Ctrl-Z (or SIGTSTP to quorumlock) stops the whole group with SIGSTOP, and
  quorumlock with it: its renewals stop too, and the lease may run out
  while stopped. When continued (fg, bg), quorumlock extends the lock
  before it continues the group; if the lease ran out, the group — which did
  no work unlocked — is killed and quorumlock exits 77. With a controlling
  terminal, a CMD that stops by itself (reading the terminal from the
  background) stops quorumlock in the same way; without one (cron,
  systemd), quorumlock keeps renewing while CMD is stopped.
  If the lock is lost while CMD runs (too few nodes renewed it before its
  validity ran out), CMD's group gets SIGTERM; if any of it is left after
  --grace, SIGKILL, with every other process under the run, in whatever
  process group; quorumlock exits 77. CMD runs unprotected from the loss
  until it exits: handle SIGTERM promptly.

Flags:
{{flags}}
Exit status:
  CMD's status  CMD ran under the lock (128+N if it died of signal N; see
                above for the signals quorumlock dies of instead)
  2             bad flags or arguments, or --limit N while K is held with
                another limit
  69            fewer than a majority of nodes answered (EX_UNAVAILABLE)
  75            the lock is held elsewhere (with --limit, every permit): enough
                nodes refused it that no majority could grant it within
                --wait (EX_TEMPFAIL); --conflict-exit-code (-E) changes it
  76            the masters started less than the restart guard ago (a new
                deployment, or restarts): vouch for new masters with
                'quorumlock trust', or wait as the message says
  77            the lock was lost while CMD ran, while it was stopped, or
                found lost at release: CMD's group was stopped, and its work
                may have overlapped another holder's (EX_NOPERM)
  78            nodes answered with errors that waiting will not fix (out of
                memory, a replica, an ACL user without INFO or the lock's
                commands): the message names each node and its error
                (EX_CONFIG)
  125           quorumlock itself failed
  126, 127      CMD could not be executed, or was not found (checked before
                the lock is taken)

With --wait D, run gives up within D plus the node timeout, whatever the
nodes do (exit 76 reads the masters' starts once more, within another node
timeout, at least 100ms). Every duration flag is at most 8760h (a year:
longer ones are refused, exit 2), and --ttl at most 4380h: the lock's
fencing state is kept for 24h or twice the TTL, whichever is longer, after
its last use. Node addresses are shown without their passwords. -v logs
each renewal, the nodes' failures, and a node that stops or starts
answering. Masters are numbered from 0 in the order of --nodes, in errors
and -v lines alike, as the library numbers them. If stderr's reader goes
away, only the log lines are lost.

Examples:
  # Run the nightly report on one machine of the fleet at most; skip it if
  # another machine runs it already.
  quorumlock run --nodes r1:6379,r2:6379,r3:6379 --key nightly-report -- ./report.sh

  # Queue up to ten minutes behind other deployments.
  export QUORUMLOCK_NODES=r1:6379,r2:6379,r3:6379
  quorumlock run --key deploy --wait 10m -- make deploy

  # Use the fencing token in a script.
  quorumlock run --key migrate -- sh -c 'psql -c "select migrate($QUORUMLOCK_TOKEN)"'

  # Move stock between two warehouses: both locks, or wait for both.
  quorumlock run --keys stock-east,stock-west --wait 1m -- ./transfer.sh

  # Back up while other readers read, but never during a schema change
  # (which runs with --key schema, without --read).
  quorumlock run --key schema --read --wait 5m -- ./backup.sh

  # At most four encoders at once over the fleet.
  quorumlock run --key encoder --limit 4 --wait 1h -- sh -c 'encode --slot "$QUORUMLOCK_PERMIT"'

  # In cron: skip quietly (exit 0) when another machine runs the job; fail
  # loudly on anything else.
  quorumlock run --key backup -E 0 -- ./backup.sh
`
