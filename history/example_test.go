package history_test

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/seed818c56a1/quorumlock/history"
)

// A history written by hand, read back and drawn: one hold of "stock",
// and a kill of a master meanwhile.
func Example() {
	var file bytes.Buffer
	w := history.NewWriter(&file)
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	w.Write(history.Record{Type: history.TypeGrant, Time: t0, Client: "worker-1", Key: "stock", Token: 41})
	w.Write(history.Record{Type: history.TypeFault, Time: t0.Add(time.Second), End: t0.Add(2 * time.Second),
		Node: "10.0.0.2:6379", Fault: history.FaultKill})
	w.Write(history.Record{Type: history.TypeRelease, Time: t0.Add(3 * time.Second), Client: "worker-1", Key: "stock", Token: 41})
	fmt.Print(file.String())

	recs, err := history.Read(&file)
	if err != nil {
		fmt.Println(err)
		return
	}
	var page strings.Builder
	if err := history.Render(&page, recs); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.Count(page.String(), `<rect class="hold`), "hold and",
		strings.Count(page.String(), `<rect class="fault`), "fault drawn")
	// Output:
	// {"type":"grant","time":"2026-11-26T12:00:00Z","client":"worker-1","key":"stock","token":41}
	// {"type":"fault","time":"2026-11-26T12:00:01Z","end":"2026-11-26T12:00:02Z","node":"10.0.0.2:6379","fault":"kill"}
	// {"type":"release","time":"2026-11-26T12:00:03Z","client":"worker-1","key":"stock","token":41}
	// 1 hold and 1 fault drawn
}
