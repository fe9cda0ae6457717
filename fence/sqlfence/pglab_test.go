package sqlfence_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
)

// A pgServer is a PostgreSQL server that the tests start themselves, on a
// loopback port, its data in a temporary directory.
type pgServer struct {
	DSN  string // a URL for the pgx driver: user sqlfence, database postgres
	dir  string
	bin  string
	user *user.User // the owner of the server's files when run as root; nil otherwise
}

// pgBin returns the directory of initdb and pg_ctl: from PATH, else the
// newest of Debian's /usr/lib/postgresql/<version>/bin.
func pgBin() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(dirs) == 0 {
		return "", errors.New("no PostgreSQL server installed (Debian: apt-get install -y postgresql)")
	}
	slices.SortFunc(dirs, func(a, b string) int { return pgVersion(b) - pgVersion(a) })
	return filepath.Dir(dirs[0]), nil
}

// pgVersion reads the major version from /usr/lib/postgresql/<v>/bin/initdb.
func pgVersion(initdb string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(initdb))))
	return v
}

// startPostgres initializes a cluster in a new temporary directory and
// starts its server on a free loopback port, as user postgres when run as
// root (the server refuses root). Call stop when done.
func startPostgres() (*pgServer, error) {
	bin, err := pgBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "sqlfence-pg-")
	if err != nil {
		return nil, err
	}
	s := &pgServer{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		if s.user, err = user.Lookup("postgres"); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root and no user postgres to run the server as: %w", err)
		}
		uid, _ := strconv.Atoi(s.user.Uid)
		gid, _ := strconv.Atoi(s.user.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := s.run("initdb", "-D", s.data(), "-A", "trust", "-U", "sqlfence", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		s.stop()
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		err = s.start()
		if err == nil || attempt == 2 {
			break
		}
	}
	if err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *pgServer) data() string { return filepath.Join(s.dir, "data") }

// start starts the server on a free port (another process may take the
// port first: the caller tries again).
func (s *pgServer) start() error {
	port, err := freePort()
	if err != nil {
		return err
	}
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c max_connections=50", port, s.dir)
	if err := s.run("pg_ctl", "-D", s.data(), "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60", "-o", opts, "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.dir, "log"))
		return fmt.Errorf("%w\n%s", err, log)
	}
	s.DSN = fmt.Sprintf("postgres://sqlfence@127.0.0.1:%d/postgres?sslmode=disable", port)
	return nil
}

// stop stops the server, if it runs, and removes its files.
func (s *pgServer) stop() {
	if s.DSN != "" {
		_ = s.run("pg_ctl", "-D", s.data(), "-m", "immediate", "-w", "stop")
	}
	_ = os.RemoveAll(s.dir)
}

// run runs one of the server's programs, as user postgres when root.
func (s *pgServer) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(s.bin, name), args...)
	if s.user != nil {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", filepath.Join(s.bin, name)}, args...)...)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, out)
	}
	return nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
