package redislab

import "testing"

// Kill kills the nodes at the given indexes (Node.Kill), in order, failing
// t on any error.
func (l *Lab) Kill(t testing.TB, idx ...int) {
	t.Helper()
	for _, i := range idx {
		if err := l.Nodes[i].Kill(); err != nil {
			t.Fatalf("redislab: kill node %d: %v", i, err)
		}
	}
}

// Restart restarts the nodes at the given indexes (Node.Restart), in order,
// failing t on any error. With empty they come back without their data.
func (l *Lab) Restart(t testing.TB, empty bool, idx ...int) {
	t.Helper()
	for _, i := range idx {
		if err := l.Nodes[i].Restart(empty); err != nil {
			t.Fatalf("redislab: restart node %d (empty=%v): %v", i, empty, err)
		}
	}
}

// Pause pauses the nodes at the given indexes (Node.Pause), failing t on any
// error. Each is resumed in t.Cleanup, unless the test resumed it already.
func (l *Lab) Pause(t testing.TB, idx ...int) {
	t.Helper()
	for _, i := range idx {
		if err := l.Nodes[i].Pause(); err != nil {
			t.Fatalf("redislab: pause node %d: %v", i, err)
		}
		t.Cleanup(func() {
			if err := l.Nodes[i].Resume(); err != nil {
				t.Errorf("redislab: resume node %d: %v", i, err)
			}
		})
	}
}

// Resume resumes the nodes at the given indexes (Node.Resume), reporting
// any error to t.
func (l *Lab) Resume(t testing.TB, idx ...int) {
	t.Helper()
	for _, i := range idx {
		if err := l.Nodes[i].Resume(); err != nil {
			t.Errorf("redislab: resume node %d: %v", i, err)
		}
	}
}
