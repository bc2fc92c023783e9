// Package pgtest starts a throwaway PostgreSQL server from Debian's
// packages for tests: initdb into a temporary directory, postgres on a free
// loopback port, trust authentication, killed when the test binary exits
// (its stdin pipe closes) and its directory removed.
//
// Tests call Skip or Shared; each test that writes takes a database of its
// own from NewDatabase, so tests of one binary may run in parallel.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// InstallCommand installs the server the tests need on Debian.
const InstallCommand = "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql"

// StartTimeout bounds initdb plus the wait for the server to accept
// connections.
var StartTimeout = 120 * time.Second

// Server is a running PostgreSQL.
type Server struct {
	Dir  string // data directory (and socket directory)
	Port int
	// URL is a connection URL of the maintenance database "postgres" as
	// the superuser "postgres".
	URL string

	stdin  io.WriteCloser
	exited chan struct{}
}

// binDir returns the directory of initdb and postgres, newest version
// first.
func binDir() (string, error) {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("initdb not found in /usr/lib/postgresql/*/bin or PATH")
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// Available reports why PostgreSQL cannot be started here, or "".
func Available() string {
	if _, err := binDir(); err != nil {
		return fmt.Sprintf("PostgreSQL server not installed (%v; CI installs it via scripts/test.sh): %s", err, InstallCommand)
	}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			return "running as root, and initdb refuses root: no user postgres to run it as"
		}
		if _, err := exec.LookPath("runuser"); err != nil {
			return "running as root, and initdb refuses root: runuser not found"
		}
	}
	return ""
}

// Skip skips t unless PostgreSQL can be started here.
func Skip(t testing.TB) {
	t.Helper()
	if why := Available(); why != "" {
		t.Skip(why)
	}
}

var shared struct {
	once sync.Once
	s    *Server
	err  error
}

// Shared returns the test binary's one PostgreSQL, started by the first
// call; it runs until the binary exits.
func Shared(t testing.TB) *Server {
	t.Helper()
	Skip(t)
	shared.once.Do(func() { shared.s, shared.err = Start() })
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.s
}

// wrapper runs postgres in the foreground and kills it (SIGQUIT, then
// SIGKILL) when its stdin, a pipe from the test binary, closes; then
// removes the directory $1.
const wrapper = `exec 3<&0
dir="$1"; bin="$2"; shift 2
"$bin" "$@" </dev/null >"$dir/postgres.log" 2>&1 &
pid=$!
(read _ignored <&3; kill -QUIT $pid 2>/dev/null; sleep 2; kill -9 $pid 2>/dev/null; sleep 1; rm -rf "$dir") &
wait $pid
`

// Start starts a new server; it stops when the test binary exits. Most
// tests use Shared.
func Start() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	asRoot := os.Geteuid() == 0
	run := func(name string, args ...string) *exec.Cmd {
		if asRoot {
			return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
		}
		return exec.Command(name, args...)
	}
	if asRoot {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, err
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
	defer cancel()
	initdb := run(filepath.Join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "--locale=C")
	if out, err := initdb.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("pgtest: initdb: %v: %s", err, out)
	}
	var lastErr error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		args := []string{"-D", data, "-p", strconv.Itoa(port), "-k", dir,
			"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
			"-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "shared_buffers=128MB"}
		var cmd *exec.Cmd
		if asRoot {
			cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", "sh", "-c", wrapper, "sh", dir, filepath.Join(bin, "postgres")}, args...)...)
		} else {
			cmd = exec.Command("sh", append([]string{"-c", wrapper, "sh", dir, filepath.Join(bin, "postgres")}, args...)...)
		}
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			return nil, fmt.Errorf("pgtest: starting postgres: %w", err)
		}
		s := &Server{Dir: dir, Port: port, URL: fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port), stdin: stdin, exited: make(chan struct{})}
		go func() { cmd.Wait(); close(s.exited) }()
		if lastErr = s.waitReady(ctx); lastErr == nil {
			return s, nil
		}
		s.stopOnly()
		if ctx.Err() != nil {
			break
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

func (s *Server) waitReady(ctx context.Context) error {
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("pgtest: postgres exited before accepting connections; log:\n%s", s.LogTail())
		default:
		}
		c, err := pgx.Connect(ctx, s.URL)
		if err == nil {
			c.Close(ctx)
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("pgtest: postgres did not accept connections within %v (last: %v); log:\n%s", StartTimeout, err, s.LogTail())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// LogTail returns the last lines of the server's log.
func (s *Server) LogTail() string {
	data, _ := os.ReadFile(filepath.Join(s.Dir, "postgres.log"))
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// stopOnly stops the server (its directory goes with it).
func (s *Server) stopOnly() {
	s.stdin.Close()
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
	}
}

// Stop stops a server from Start; Shared's runs until the binary exits.
func (s *Server) Stop() { s.stopOnly() }

// NewDatabase creates an empty database of t's own and returns its URL; it
// is dropped when t ends.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	var b [6]byte
	rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgx.Connect(ctx, s.URL)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		c, err := pgx.Connect(ctx, s.URL)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, name)
}

// Database is Shared(t).NewDatabase(t).
func Database(t testing.TB) string {
	t.Helper()
	return Shared(t).NewDatabase(t)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
