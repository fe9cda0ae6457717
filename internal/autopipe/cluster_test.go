package autopipe_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed818c56a1/quorumlock/internal/redislab"
	"github.com/seed818c56a1/quorumlock/internal/testkit"
)

// TestClusterClient runs concurrent calls through a Pipe over a ClusterClient
// of a one-node cluster: go-redis routes each batch's commands by slot.
func TestClusterClient(t *testing.T) {
	lab := redislab.Start(t, 1, redislab.WithArgs("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"))
	node := lab.Clients(t)[0]
	ctx := testkit.Context(t, 20*time.Second)
	if err := node.Do(ctx, "cluster", "addslotsrange", 0, 16383).Err(); err != nil {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %v", err)
	}
	testkit.Eventually(t, 10*time.Second, "cluster_state:ok", func() bool {
		info, err := node.ClusterInfo(ctx).Result()
		return err == nil && strings.Contains(info, "cluster_state:ok")
	})
	addr := lab.Addrs()[0]
	cc := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: []string{addr},
		// The node may announce an address only reachable from inside its
		// container: always dial the one the lab gave.
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	})
	t.Cleanup(func() { cc.Close() })
	p := newPipe(t, cc)
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 20 {
				key := fmt.Sprintf("c%d:%d", w, i) // keys spread over many slots
				if n, err := p.Do(ctx, "incr", key).Int64(); err != nil || n != 1 {
					t.Errorf("INCR %s = %d, %v; want 1", key, n, err)
					return
				}
				got, err := p.Do(ctx, "eval", "return redis.call('get', KEYS[1])", 1, key).Text()
				if err != nil || got != "1" {
					t.Errorf("EVAL get %s = %q, %v; want \"1\"", key, got, err)
					return
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%+v", p.Stats())
}
