package main

import (
	"fmt"
	"io"
	"strconv"
	"time"
)

// printStatus writes st as one line per node, a verdict on the writer, the
// readers, and with --limit the semaphore.
func printStatus(w io.Writer, st *lockStatus) error {
	fmt.Fprintf(w, "lock %s (fence %s)\n", st.LockKey, st.FenceKey)
	tw := newTable(w)
	fmt.Fprintln(tw, "NODE\tSTATE\tOWNER\tTTL\tHOLDS\tFENCE\tREADERS\tUP\tGUARD\tERROR")
	for _, n := range st.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Addr, keyState(&n), orDash(n.Owner),
			ttlText(&n.holderStatus), countText(n.Owner != "", n.Holds), countText(n.Reachable, n.Fence),
			countText(n.Reachable, int64(n.Readers)), upText(&n), guardText(&n), orDash(n.Error))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if line := semaphoreLine(st); line != "" {
		fmt.Fprintln(w, line) // the key is free as a lock, not as a semaphore
	} else {
		fmt.Fprintln(w, verdict(st.agreement, st))
	}
	_, err := fmt.Fprintf(w, "%s\n%s\n", readersLine(st), guardLine(st))
	if err != nil || st.Semaphore == nil {
		return err
	}
	return printSemaphore(w, st.Semaphore, st)
}

// keyState is a node's state of the key: its writer's, or "read" when it
// has readers and no writer.
func keyState(n *nodeStatus) string {
	if n.Reachable && n.Owner == "" && n.Readers > 0 {
		return "read"
	}
	return nodeState(&n.holderStatus)
}

func nodeState(n *holderStatus) string {
	switch {
	case !n.Reachable:
		return "error"
	case n.Owner == "":
		return "free"
	}
	return "held"
}

// verdict says in one line whether a majority holds a lock of st's nodes
// (the key's, or a permit), as a says.
func verdict(a agreement, st *lockStatus) string {
	n := len(st.Nodes)
	switch {
	case a.Held == yes:
		return fmt.Sprintf("held: owner %s on %d of %d nodes (a majority is %d)", a.Owner, a.Holders, n, st.Need)
	case a.State == stateShared:
		return fmt.Sprintf("shared: no writer, %d readers on a majority of nodes", st.Readers.n)
	case st.Reachable < st.Need:
		return fmt.Sprintf("unknown: only %d of %d nodes answered (a majority is %d)", st.Reachable, n, st.Need)
	case a.Holders > 0:
		return fmt.Sprintf("not held: owner %s on only %d of %d nodes (a majority is %d)", a.Owner, a.Holders, n, st.Need)
	}
	return fmt.Sprintf("free: no node holds the lock (%d of %d nodes answered)", st.Reachable, n)
}

func ttlText(n *holderStatus) string {
	switch {
	case n.Owner == "":
		return "-"
	case n.TTLMillis < 0:
		return "none"
	}
	return (time.Duration(n.TTLMillis) * time.Millisecond).String()
}

func countText(known bool, v int64) string {
	if !known {
		return "-"
	}
	return strconv.FormatInt(v, 10)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// readersLine says how many readers a majority of nodes has, if that is
// known.
func readersLine(st *lockStatus) string {
	if !st.Readers.known {
		return fmt.Sprintf("readers: unknown: only %d of %d nodes answered (%s)", st.Reachable, len(st.Nodes), st.ReadersKey)
	}
	return fmt.Sprintf("readers: %d on a majority of nodes (%s)", st.Readers.n, st.ReadersKey)
}
