package sparqltest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// InstallCommand installs the server the tests need on Debian.
const InstallCommand = "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends virtuoso-opensource-7-bin"

// StartTimeout bounds the wait for a fresh server to answer queries.
// Creating the database takes about 10 s on an idle machine; CI machines
// run several test binaries at once.
var StartTimeout = 120 * time.Second

// Server is a running Virtuoso.
type Server struct {
	// UpdateURL takes SPARQL 1.1 Update requests, QueryURL SPARQL 1.1
	// queries (the same /sparql endpoint on Virtuoso); GraphStoreURL is
	// the Graph Store HTTP Protocol endpoint (/sparql-graph-crud).
	UpdateURL, QueryURL, GraphStoreURL string
	// Dir holds the database, virtuoso.ini and virtuoso.log.
	Dir string
	// SQLPort is the loopback port of the SQL (isql) listener.
	SQLPort int

	stdin    io.WriteCloser
	exited   chan struct{}
	baseline []string // graphs of the fresh database, kept by Reset

	resetMu sync.Mutex
}

// ini is a minimal configuration: the -bin package ships none. Relative
// paths resolve against the working directory, the server's Dir.
// TransactionAfterImageLimit is raised from its 50 MB default, with which
// swapping in a snapshot of about a million triples aborts (SR325); a user's
// Virtuoso needs the same for large snapshots.
const ini = `[Database]
DatabaseFile = virtuoso.db
ErrorLogFile = virtuoso.log
TransactionFile = virtuoso.trx
xa_persistent_file = virtuoso.pxa
[TempDatabase]
DatabaseFile = virtuoso-temp.db
TransactionFile = virtuoso-temp.trx
[Parameters]
ServerPort = 127.0.0.1:%d
NumberOfBuffers = 10000
MaxDirtyBuffers = 6000
TransactionAfterImageLimit = 2000000000
DirsAllowed = .
[HTTPServer]
ServerPort = 127.0.0.1:%d
ServerRoot = .
ServerThreads = 8
[SPARQL]
ResultSetMaxRows = 0
MaxQueryExecutionTime = 0
`

// wrapper runs Virtuoso in the foreground and kills it when its stdin (a
// pipe from the test binary) closes; $1 is removed afterwards when $2 is
// "rm" (Shared's directory, which no test cleans up).
//
// A background job's stdin is /dev/null unless redirected explicitly, so
// the pipe is kept as fd 3 for the watcher.
const wrapper = `exec 3<&0
virtuoso-t -f -c virtuoso.ini >virtuoso.out 2>&1 </dev/null &
pid=$!
(read _ignored <&3; kill -9 $pid 2>/dev/null; if [ "$2" = rm ]; then sleep 1; rm -rf "$1"; fi) &
wait $pid
`

// Skip skips t unless virtuoso-t and isql-vt are installed.
func Skip(t testing.TB) {
	t.Helper()
	for _, bin := range []string{"virtuoso-t", "isql-vt"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s not installed (CI installs it via scripts/test.sh): %s", bin, InstallCommand)
		}
	}
}

// Start starts a Virtuoso of t's own, stopped when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	Skip(t)
	s, err := start(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	return s
}

var shared struct {
	once sync.Once
	s    *Server
	err  error
}

// Shared returns the test binary's one Virtuoso, started by the first
// call; it runs until the binary exits. Tests that use it must not run in
// parallel with each other; each calls Reset first.
func Shared(t testing.TB) *Server {
	t.Helper()
	Skip(t)
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "sparqltest-")
		if err != nil {
			shared.err = err
			return
		}
		shared.s, shared.err = start(dir, true)
		if shared.err != nil {
			os.RemoveAll(dir)
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.s
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start tries a few times: another process may take a port between
// freePort and Virtuoso's bind.
func start(dir string, removeDir bool) (*Server, error) {
	var err error
	for range 3 {
		var s *Server
		s, err = startOnce(dir, removeDir)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errExited) {
			return nil, err
		}
		// A fresh directory for the next try: a half-created database
		// would not open again.
		for _, f := range []string{"virtuoso.db", "virtuoso.trx", "virtuoso.pxa", "virtuoso-temp.db", "virtuoso-temp.trx", "virtuoso.lck"} {
			os.Remove(filepath.Join(dir, f))
		}
	}
	return nil, err
}

var errExited = errors.New("virtuoso-t exited")

func startOnce(dir string, removeDir bool) (*Server, error) {
	sqlPort, err := freePort()
	if err != nil {
		return nil, err
	}
	httpPort, err := freePort()
	if err != nil {
		return nil, err
	}
	if sqlPort == httpPort {
		return nil, fmt.Errorf("%w: same port twice", errExited)
	}
	if err := os.WriteFile(filepath.Join(dir, "virtuoso.ini"), fmt.Appendf(nil, ini, sqlPort, httpPort), 0o644); err != nil {
		return nil, err
	}
	rm := ""
	if removeDir {
		rm = "rm"
	}
	cmd := exec.Command("sh", "-c", wrapper, "sh", dir, rm)
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("sparqltest: starting virtuoso-t: %w", err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	s := &Server{
		UpdateURL:     base + "/sparql",
		QueryURL:      base + "/sparql",
		GraphStoreURL: base + "/sparql-graph-crud",
		Dir:           dir,
		SQLPort:       sqlPort,
		stdin:         stdin,
		exited:        make(chan struct{}),
	}
	go func() { cmd.Wait(); close(s.exited) }()
	if err := s.waitReady(); err != nil {
		s.stop()
		return nil, err
	}
	if err := s.isql(`GRANT SPARQL_UPDATE TO "SPARQL";`); err != nil {
		s.stop()
		return nil, err
	}
	if s.baseline, err = s.graphs(context.Background()); err != nil {
		s.stop()
		return nil, err
	}
	return s, nil
}

func (s *Server) waitReady() error {
	deadline := time.Now().Add(StartTimeout)
	c := &http.Client{Timeout: 5 * time.Second}
	ask := s.QueryURL + "?query=" + url.QueryEscape("ASK {}")
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("sparqltest: %w before answering queries; log:\n%s", errExited, s.LogTail())
		default:
		}
		resp, err := c.Get(ask)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("sparqltest: virtuoso-t did not answer %s with 200 within %v (last: %v); log:\n%s", ask, StartTimeout, err, s.LogTail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// isql runs one SQL statement as dba (the fresh database's password).
func (s *Server) isql(stmt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "isql-vt", fmt.Sprintf("127.0.0.1:%d", s.SQLPort), "dba", "dba", "exec="+stmt).CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("*** Error")) {
		return fmt.Errorf("sparqltest: isql-vt %q: %v: %s", stmt, err, out)
	}
	return nil
}

// LogTail returns the last lines of Virtuoso's log and output.
func (s *Server) LogTail() string {
	var b strings.Builder
	for _, f := range []string{"virtuoso.log", "virtuoso.out"} {
		data, _ := os.ReadFile(filepath.Join(s.Dir, f))
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 20 {
			lines = lines[len(lines)-20:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", f, strings.Join(lines, "\n"))
	}
	return b.String()
}

func (s *Server) stop() {
	s.stdin.Close()
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
	}
}

// graphs lists the graphs that hold triples.
func (s *Server) graphs(ctx context.Context) ([]string, error) {
	q := s.QueryURL + "?query=" + url.QueryEscape("SELECT DISTINCT ?g WHERE { GRAPH ?g { ?s ?p ?o } }")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, q, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/sparql-results+json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("sparqltest: listing graphs: %s: %s", resp.Status, b)
	}
	var r struct {
		Results struct {
			Bindings []map[string]struct{ Value string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("sparqltest: listing graphs: %w", err)
	}
	var gs []string
	for _, b := range r.Results.Bindings {
		gs = append(gs, b["g"].Value)
	}
	slices.Sort(gs)
	return gs, nil
}

// client bounds each set-up request: a wedged server fails the test
// instead of hanging the binary.
var client = &http.Client{Timeout: 2 * time.Minute}

// Reset drops every graph the fresh database did not have, so a test on
// the shared server starts from an empty store.
func (s *Server) Reset(t testing.TB) {
	t.Helper()
	s.resetMu.Lock()
	defer s.resetMu.Unlock()
	gs, err := s.graphs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var drops []string
	for _, g := range gs {
		if !slices.Contains(s.baseline, g) {
			drops = append(drops, "DROP SILENT GRAPH <"+g+">")
		}
	}
	if len(drops) == 0 {
		return
	}
	if err := s.Update(context.Background(), strings.Join(drops, " ;\n")); err != nil {
		t.Fatal(err)
	}
}

// Update sends one SPARQL Update request (for test set-up).
func (s *Server) Update(ctx context.Context, update string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.UpdateURL, strings.NewReader(update))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/sparql-update")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("sparqltest: update: %s: %s", resp.Status, b)
	}
	return nil
}
