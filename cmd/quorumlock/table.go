package main

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"
)

// newTable returns a writer that aligns tab-separated columns; Flush it.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
}

// printStatus writes st as one line per node and a verdict.
func printStatus(w io.Writer, st *lockStatus) error {
	fmt.Fprintf(w, "lock %s (fence %s)\n", st.LockKey, st.FenceKey)
	tw := newTable(w)
	fmt.Fprintln(tw, "NODE\tSTATE\tOWNER\tTTL\tHOLDS\tFENCE\tERROR")
	for _, n := range st.Nodes {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n.Addr, nodeState(&n), orDash(n.Owner),
			ttlText(&n), countText(n.Owner != "", n.Holds), countText(n.Reachable, n.Fence), orDash(n.Error))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, verdict(st))
	return err
}

func nodeState(n *nodeStatus) string {
	switch {
	case !n.Reachable:
		return "error"
	case n.Owner == "":
		return "free"
	}
	return "held"
}

// verdict says in one line whether a majority holds the lock.
func verdict(st *lockStatus) string {
	n := len(st.Nodes)
	switch {
	case st.Held:
		return fmt.Sprintf("held: owner %s on %d of %d nodes (a majority is %d)", st.Owner, st.Holders, n, st.Need)
	case st.Reachable < st.Need:
		return fmt.Sprintf("unknown: only %d of %d nodes answered (a majority is %d)", st.Reachable, n, st.Need)
	case st.Holders > 0:
		return fmt.Sprintf("not held: owner %s on only %d of %d nodes (a majority is %d)", st.Owner, st.Holders, n, st.Need)
	}
	return fmt.Sprintf("free: no node holds the lock (%d of %d nodes answered)", st.Reachable, n)
}

func ttlText(n *nodeStatus) string {
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
