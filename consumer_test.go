package quorumlock_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxConsumerModules bounds the module graph of a program that imports
// only redlock (go-redis, backoff and x/sync bring 13; 15 today).
const maxConsumerModules = 20

// heavyModules must never reach a program that imports only redlock: they
// are the lab's, the tests', the command line's or the OpenTelemetry SDK's.
var heavyModules = []string{
	"testcontainers", "moby", "containerd", "docker", "go.opentelemetry.io",
	"miniredis", "gopher-lua", "gopsutil", "logrus", "pgregory.net/rapid",
}

// A program that imports only redlock lists at most maxConsumerModules
// modules in go list -m all, none of heavyModules; one that imports
// otelredlock gets the OpenTelemetry API, not its SDK. Each is a scratch
// module whose replace points at this checkout.
func TestConsumerModuleGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go mod tidy in scratch modules")
	}
	t.Run("redlock", func(t *testing.T) {
		mods := consumerModules(t, "github.com/seed818c56a1/quorumlock/redlock")
		if len(mods) > maxConsumerModules {
			t.Errorf("%d modules, want at most %d:\n%s", len(mods), maxConsumerModules, strings.Join(mods, "\n"))
		}
		for _, m := range mods {
			for _, heavy := range heavyModules {
				if strings.Contains(m, heavy) {
					t.Errorf("module %s (%s) in the graph of a program importing redlock", m, heavy)
				}
			}
		}
	})
	t.Run("otelredlock", func(t *testing.T) {
		mods := consumerModules(t, "github.com/seed818c56a1/quorumlock/redlock/otelredlock")
		api := false
		for _, m := range mods {
			api = api || m == "go.opentelemetry.io/otel"
			if strings.HasPrefix(m, "go.opentelemetry.io/otel/sdk") {
				t.Errorf("the OpenTelemetry SDK (%s) in the graph of a program importing otelredlock", m)
			}
		}
		if !api {
			t.Errorf("go.opentelemetry.io/otel missing from the graph:\n%s", strings.Join(mods, "\n"))
		}
	})
}

// consumerModules makes a program that imports pkg, tidies its module and
// returns the paths go list -m all prints, the program's own excluded.
func consumerModules(t *testing.T, pkg string) []string {
	t.Helper()
	root, err := os.Getwd() // the root module's directory
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module example.com/consumer\n\ngo 1.26.0\n\n" +
		"replace github.com/seed818c56a1/quorumlock => " + root + "\n\n" +
		"replace github.com/seed818c56a1/quorumlock/redlock/otelredlock => " + filepath.Join(root, "redlock", "otelredlock") + "\n"
	main := "package main\n\nimport _ \"" + pkg + "\"\n\nfunc main() {}\n"
	for name, text := range map[string]string{"go.mod": gomod, "main.go": main} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd(t, dir, "mod", "tidy")
	out := goCmd(t, dir, "list", "-m", "-f", "{{.Path}}", "all")
	return strings.Fields(out)[1:]
}

// goCmd runs the go command in dir, outside any workspace, failing t on error.
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return string(out)
}
