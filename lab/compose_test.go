package lab_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/seed818c56a1/quorumlock/lab"
)

// The repository's root, where docker-compose.yml and README.md are.
const root = ".."

// redisServices are the lab's masters, in order; the nth publishes 700n.
var redisServices = []string{"redis1", "redis2", "redis3", "redis4", "redis5"}

// loadLab loads docker-compose.yml with the loader Docker Compose uses
// (schema validation, interpolation, normalization included).
func loadLab(t *testing.T) *types.Project {
	t.Helper()
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, "docker-compose.yml")},
		cli.WithName("quorumlock"), cli.WithWorkingDirectory(root))
	if err != nil {
		t.Fatal(err)
	}
	p, err := opts.LoadProject(t.Context())
	if err != nil {
		t.Fatalf("docker-compose.yml does not load: %v", err)
	}
	return p
}

// Five independent masters on a pinned Redis 7.0 image, each healthy-checked
// and keeping its append-only file on a volume of its own.
func TestComposeRunsFiveIndependentMasters(t *testing.T) {
	p := loadLab(t)
	var masters []string
	for name, s := range p.Services {
		if strings.HasPrefix(s.Image, "redis:") {
			masters = append(masters, name)
		}
	}
	slices.Sort(masters)
	if !slices.Equal(masters, redisServices) {
		t.Fatalf("redis services %v; want %v", masters, redisServices)
	}
	data := map[string]string{}
	for i, name := range redisServices {
		s := p.Services[name]
		if !regexp.MustCompile(`^redis:7\.0\.\d+$`).MatchString(s.Image) || s.Image != lab.Image {
			t.Errorf("%s: image %q; want one pinned to a 7.0.x release, the version tested, as the container checks run (%s)", name, s.Image, lab.Image)
		}
		conf := effectiveConf(t, s)
		for _, k := range []string{"replicaof", "slaveof"} {
			if v, ok := conf[k]; ok {
				t.Errorf("%s: %s %s; want independent masters", name, k, v)
			}
		}
		if pub := published(s, 6379); pub != fmt.Sprintf("127.0.0.1:%d", 7001+i) {
			t.Errorf("%s: 6379 published on %q; want 127.0.0.1:%d", name, pub, 7001+i)
		}
		vol := volumeAt(s, "/data")
		if vol == nil || vol.Type != types.VolumeTypeVolume || vol.ReadOnly {
			t.Errorf("%s: /data is %+v; want a writable named volume for the append-only file", name, vol)
			continue
		}
		if other, ok := data[vol.Source]; ok {
			t.Errorf("%s and %s share the volume %s", other, name, vol.Source)
		}
		data[vol.Source] = name
		if _, ok := p.Volumes[vol.Source]; !ok {
			t.Errorf("%s: volume %s not declared", name, vol.Source)
		}
	}
}

// Every service has a healthcheck, and the proxy waits for every master to
// be healthy.
func TestComposeHealthchecks(t *testing.T) {
	p := loadLab(t)
	for name, s := range p.Services {
		if h := s.HealthCheck; h == nil || h.Disable || len(h.Test) < 2 || h.Test[0] == "NONE" {
			t.Errorf("%s: healthcheck %+v; want one", name, h)
		}
	}
	deps := p.Services["toxiproxy"].DependsOn
	for _, name := range redisServices {
		if c := deps[name].Condition; c != types.ServiceConditionHealthy {
			t.Errorf("toxiproxy depends on %s with condition %q; want %s", name, c, types.ServiceConditionHealthy)
		}
	}
}

// Each master runs with exactly the settings of the local test lab
// (internal/redislab/redis.conf), with persistence on, and its data dir —
// where the append-only file goes — is its volume's mount, whatever the
// image's working directory (the conf sets no dir: the local lab gives each
// process its own).
func TestComposeSettingsAreTheTestLabs(t *testing.T) {
	p := loadLab(t)
	want := parseConf(t, readFile(t, filepath.Join(root, "internal", "redislab", "redis.conf")))
	if want["appendonly"] != "yes" || want["appendfsync"] != "always" {
		t.Fatalf("redislab's redis.conf: appendonly %q, appendfsync %q; want yes, always", want["appendonly"], want["appendfsync"])
	}
	if dir, ok := want["dir"]; ok {
		t.Fatalf("redislab's redis.conf sets dir %s; want none (each local node has its own)", dir)
	}
	for _, name := range redisServices {
		got := effectiveConf(t, p.Services[name])
		if v := volumeAt(p.Services[name], got["dir"]); v == nil || v.Type != types.VolumeTypeVolume {
			t.Errorf("%s: data dir %q is not a named volume's mount: the append-only file would not be kept", name, got["dir"])
		}
		delete(got, "dir")
		if !maps.Equal(got, want) {
			t.Errorf("%s runs with\n%v\nwant redislab's\n%v", name, got, want)
		}
	}
}

// The proxies listen where lab/toxiproxy.json says, published on the host
// at the same ports, each in front of one master — the ports README
// promises, with the API on 8474.
func TestComposeToxiproxyPorts(t *testing.T) {
	p := loadLab(t)
	var proxies []struct{ Name, Listen, Upstream string }
	if err := json.Unmarshal([]byte(readFile(t, "toxiproxy.json")), &proxies); err != nil {
		t.Fatalf("toxiproxy.json: %v", err)
	}
	tp := p.Services["toxiproxy"]
	if pub := published(tp, 8474); pub != "127.0.0.1:8474" {
		t.Errorf("toxiproxy API published on %q; want 127.0.0.1:8474", pub)
	}
	var addrs []string
	for i, px := range proxies {
		_, port, _ := strings.Cut(px.Listen, ":")
		n, _ := strconv.Atoi(port)
		if want := fmt.Sprintf("127.0.0.1:%d", n); published(tp, uint32(n)) != want || n != 7101+i {
			t.Errorf("proxy %s listens on %s, published on %q; want 7101+%d, published on %s", px.Name, px.Listen, published(tp, uint32(n)), i, want)
		}
		if want := redisServices[i] + ":6379"; px.Upstream != want {
			t.Errorf("proxy %s goes to %s; want %s", px.Name, px.Upstream, want)
		}
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", n))
	}
	readme := readFile(t, filepath.Join(root, "README.md"))
	for _, promise := range []string{"ports\n7101–7105", "--nodes " + strings.Join(addrs, ",")} {
		if !strings.Contains(readme, promise) {
			t.Errorf("README does not say %q", promise)
		}
	}
}

// README and the compose file document the first start: vouching for the
// new masters with quorumlock trust, on the masters' ports.
func TestComposeFirstStartIsDocumented(t *testing.T) {
	var addrs []string
	for i := range redisServices {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", 7001+i))
	}
	trust := "quorumlock trust --nodes " + strings.Join(addrs, ",")
	for _, file := range []string{"README.md", "docker-compose.yml"} {
		if !strings.Contains(readFile(t, filepath.Join(root, file)), trust) {
			t.Errorf("%s does not say %q", file, trust)
		}
	}
}

// effectiveConf returns the settings a redis service runs with: the config
// file its command names, read from the host file mounted there, then the
// command's --name value overrides.
func effectiveConf(t *testing.T, s types.ServiceConfig) map[string]string {
	t.Helper()
	cmd := s.Command
	if len(cmd) < 2 || cmd[0] != "redis-server" {
		t.Fatalf("%s: command %q; want redis-server and a config file", s.Name, cmd)
	}
	mount := volumeAt(s, cmd[1])
	if mount == nil || mount.Type != types.VolumeTypeBind {
		t.Fatalf("%s: config %s is not a file mounted from the repository", s.Name, cmd[1])
	}
	conf := parseConf(t, readFile(t, mount.Source))
	var name string
	for _, arg := range cmd[2:] {
		if k, ok := strings.CutPrefix(arg, "--"); ok {
			name, conf[strings.ToLower(k)] = strings.ToLower(k), ""
			continue
		}
		conf[name] = strings.TrimSpace(conf[name] + " " + arg)
	}
	return conf
}

// parseConf returns a redis.conf's settings by lowercased name; a setting
// given twice keeps its last value, as redis-server does.
func parseConf(t *testing.T, text string) map[string]string {
	t.Helper()
	conf := map[string]string{}
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		conf[strings.ToLower(f[0])] = strings.Join(f[1:], " ")
	}
	return conf
}

// published returns host_ip:port where s publishes its port target, or "".
func published(s types.ServiceConfig, target uint32) string {
	for _, p := range s.Ports {
		if p.Target == target {
			return p.HostIP + ":" + p.Published
		}
	}
	return ""
}

// volumeAt returns s's volume mounted at target, or nil.
func volumeAt(s types.ServiceConfig, target string) *types.ServiceVolumeConfig {
	for i, v := range s.Volumes {
		if v.Target == target {
			return &s.Volumes[i]
		}
	}
	return nil
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
