package history_test

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/seed818c56a1/quorumlock/history"
)

// chromiumWait bounds one headless browser run on a loaded machine.
const chromiumWait = 2 * time.Minute

// chromium runs Debian's headless chromium on page with extra flags and
// returns its stdout and stderr. Without chromium it skips t, or fails it
// when CI=true.
func chromium(t *testing.T, page string, flags ...string) (stdout, stderr string) {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium not found (CI=true, so this is a failure): install it with scripts/deps.sh")
		}
		t.Skip("chromium not found; install it (Debian: apt-get install -y chromium) or run scripts/deps.sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), chromiumWait)
	defer cancel()
	// Offline: no host name resolves.
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0",
		"--host-resolver-rules=MAP * ~NOTFOUND"}, flags...)
	cmd := exec.CommandContext(ctx, bin, append(args, "file://"+page)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, errb.String())
	}
	return out.String(), errb.String()
}

// loadErrors are what chromium logs of a page that failed to load a
// resource or run a script.
var loadErrors = regexp.MustCompile(`(?i)uncaught|net::ERR_|failed to load|not allowed to load|refused to|CONSOLE\(`)

// TestReportOpensInBrowser opens a report, with an overlap and a refused
// stale write, in a real headless browser: the page must load with no
// script or load error, its DOM must hold every hold and fault drawn, and
// the screenshot must be a picture, not a blank page. Set
// HISTORY_SCREENSHOT=file.png to keep the screenshot.
func TestReportOpensInBrowser(t *testing.T) {
	recs := append(sample(),
		history.Record{Type: history.TypeGrant, Time: at(200), Client: "intruder", Key: "stock", Token: 99, Until: at(700)},
		history.Record{Type: history.TypeRelease, Time: at(300), Client: "intruder", Key: "stock", Token: 99},
		history.Record{Type: history.TypeWrite, Time: at(900), Client: "paused", Key: "stock", Token: 1, Refused: true, Seen: 3})
	dir := t.TempDir()
	page := filepath.Join(dir, "run.html")
	if err := os.WriteFile(page, []byte(render(t, recs)), 0o644); err != nil {
		t.Fatal(err)
	}
	dom, logs := chromium(t, page, "--dump-dom")
	if m := loadErrors.FindString(logs); m != "" {
		t.Errorf("chromium reported a load or script error (%q):\n%s", m, logs)
	}
	if got, want := count(dom, "hold"), countType(recs, history.TypeGrant); got != want {
		t.Errorf("%d holds in the browser's DOM, want %d", got, want)
	}
	if got, want := count(dom, "fault"), countType(recs, history.TypeFault); got != want {
		t.Errorf("%d faults in the browser's DOM, want %d", got, want)
	}
	shot := filepath.Join(dir, "out.png")
	if keep := os.Getenv("HISTORY_SCREENSHOT"); keep != "" {
		shot, _ = filepath.Abs(keep)
	}
	_, logs = chromium(t, page, "--screenshot="+shot, "--window-size=1400,900")
	if m := loadErrors.FindString(logs); m != "" {
		t.Errorf("chromium reported a load or script error (%q):\n%s", m, logs)
	}
	requirePicture(t, shot)
}

// requirePicture fails t unless file is a 1400×900 PNG of many colours,
// red among them (the overlap).
func requirePicture(t *testing.T, file string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 900 {
		t.Errorf("screenshot is %v, want 1400×900", b.Size())
	}
	colours, red := map[[3]uint32]bool{}, 0
	for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y += 2 {
		for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x += 2 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, b >> 8}] = true
			if r>>8 > 180 && g>>8 < 140 && b>>8 < 140 {
				red++
			}
		}
	}
	if len(colours) < 30 {
		t.Errorf("screenshot has %d colours: a blank or broken page", len(colours))
	}
	if red == 0 {
		t.Error("no red in the screenshot: the overlap is not drawn")
	}
}
