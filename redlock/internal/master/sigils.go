package master

// The restart argument (redlock's argRestart; prelude.lua: restart) tells a script
// what this Client knows of its node's start, in sigils that prelude.lua
// names alike (restart_off, …):
const (
	// RestartOff: restart detection is off; the script says nothing of the
	// node's start.
	RestartOff = ""
	// RestartUnknown stands for a LASTSAVE while the Client has none to rely
	// on (Node.LastSaved): the script reports the node's start in full.
	RestartUnknown = "?"
	// RestartRecord, before the rest, asks the script for the TTL record
	// of the keys too (under the default guard while a node is young).
	RestartRecord = "+"
	// RestartCluster opens a cluster member's argument, followed by
	// "<node ID>:<LASTSAVE>," per server whose LASTSAVE the Client relies
	// on: the script picks its own server's entry by CLUSTER MYID, and
	// reads RestartUnknown when it finds none.
	RestartCluster = "@"
	// RestartIDEnd ends a cluster entry's node ID.
	RestartIDEnd = ":"
	// RestartSavedEnd ends a cluster entry's LASTSAVE (the script reads
	// the digits up to it).
	RestartSavedEnd = ","
)
