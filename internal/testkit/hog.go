package testkit

import (
	"os/exec"
	"testing"
)

// BurnCPU starts n processes that spin on the CPU (a shell's empty loop),
// competing with the test for the machine's cores the way other programs
// on a busy host do, and kills them in t.Cleanup. They are separate OS
// processes, not goroutines: the Go scheduler cannot favour the test over
// them, only the kernel's can.
func BurnCPU(t testing.TB, n int) {
	t.Helper()
	for range n {
		cmd := exec.Command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			t.Fatalf("testkit: start a CPU hog: %v", err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
}
