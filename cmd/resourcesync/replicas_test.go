//go:build linux

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/rs"
)

// balancer is a round-robin reverse proxy over replicas on loopback. A
// replica that refuses connections (killed) is skipped, as a load
// balancer's health check would.
type balancer struct {
	mu       sync.Mutex
	backends []string // host:port
	next     atomic.Uint64
	hits     sync.Map // backend -> *atomic.Int64
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	bs := slices.Clone(b.backends)
	b.mu.Unlock()
	start := int(b.next.Add(1))
	for i := range bs {
		be := bs[(start+i)%len(bs)]
		c, err := net.DialTimeout("tcp", be, time.Second)
		if err != nil {
			continue // down: the next one
		}
		c.Close()
		n, _ := b.hits.LoadOrStore(be, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		p := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: be})
		p.ServeHTTP(w, r)
		return
	}
	http.Error(w, "no replica", http.StatusBadGateway)
}

// replicaProc is a serve child process.
type replicaProc struct {
	name, addr string
	cmd        *exec.Cmd
	done       chan error
	mu         sync.Mutex
	log        bytes.Buffer
	led        time.Time // when it logged taking the scanner role
}

func (p *replicaProc) logText() string { p.mu.Lock(); defer p.mu.Unlock(); return p.log.String() }

func (p *replicaProc) leadTime() time.Time { p.mu.Lock(); defer p.mu.Unlock(); return p.led }

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startReplicaProc(t *testing.T, name string, args ...string) *replicaProc {
	t.Helper()
	p := &replicaProc{name: name, addr: freePort(t), done: make(chan error, 1)}
	p.cmd = memCmd(append([]string{"serve", "--addr", p.addr}, args...)...)
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	ready := make(chan bool, 1)
	read := func(r io.Reader) {
		defer wg.Done()
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.log.WriteString(line + "\n")
			if strings.Contains(line, "scanner role taken") && p.led.IsZero() {
				p.led = time.Now()
			}
			p.mu.Unlock()
			if strings.HasPrefix(line, "serving ") {
				select {
				case ready <- true:
				default:
				}
			}
		}
	}
	wg.Add(2)
	go read(stdout)
	go read(stderr)
	go func() { wg.Wait(); p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("replica %s log:\n%s", p.name, p.logText())
		}
	})
	select {
	case <-ready:
	case err := <-p.done:
		t.Fatalf("replica %s exited: %v\n%s", name, err, p.logText())
	case <-time.After(60 * time.Second):
		t.Fatalf("replica %s not serving after 60 s\n%s", name, p.logText())
	}
	return p
}

var locRE = regexp.MustCompile(`<loc>([^<]+)</loc>`)

// fetchDocs fetches every document reachable from the Source Description
// of the replica at addr (locs under base are rewritten to addr), by path.
func fetchDocs(addr, base string) (map[string][]byte, error) {
	out := map[string][]byte{}
	queue := []string{".well-known/resourcesync", "robots.txt"}
	c := &http.Client{Timeout: 10 * time.Second}
	for len(queue) > 0 {
		rel := queue[0]
		queue = queue[1:]
		if _, ok := out[rel]; ok {
			continue
		}
		resp, err := c.Get("http://" + addr + "/" + rel)
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("%s: %s", rel, resp.Status)
		}
		out[rel] = b
		for _, m := range locRE.FindAllSubmatch(b, -1) {
			loc := string(m[1])
			if r, ok := strings.CutPrefix(loc, base); ok && (strings.HasPrefix(r, ".resourcesync/") || strings.HasPrefix(r, ".well-known/")) {
				queue = append(queue, r)
			}
		}
	}
	return out, nil
}

// treeFiles returns the regular files under dir that are not hidden
// (relative path -> bytes).
func treeFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			out[filepath.ToSlash(rel)] = b
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTreeFiles(t *testing.T, what string, want, got map[string][]byte) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok {
			t.Errorf("%s: %s missing", what, k)
		} else if !bytes.Equal(v, g) {
			t.Errorf("%s: %s differs", what, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s extra", what, k)
		}
	}
}

// changeRecord is one Change List entry.
type changeRecord struct {
	loc, change, datetime string
}

// changeLists decodes the Change List Index and its lists from docs and
// checks that the lists are contiguous (each from is the previous until);
// it returns the records in order.
func changeLists(t *testing.T, docs map[string][]byte, base string) []changeRecord {
	t.Helper()
	idx := docs[".resourcesync/default/changelist.xml"]
	dec := rs.NewDecoder(bytes.NewReader(idx))
	if _, err := dec.Head(); err != nil {
		t.Fatalf("change list index: %v", err)
	}
	var recs []changeRecord
	var prevUntil time.Time
	n := 0
	for {
		e, err := dec.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("change list index: %v", err)
		}
		from := e.MD.From.Time()
		if n > 0 && !from.Equal(prevUntil) {
			t.Errorf("change list %s starts at %v, the previous one ends at %v: not contiguous", e.Loc, from, prevUntil)
		}
		n++
		if !e.MD.Until.IsZero() {
			prevUntil = e.MD.Until.Time()
		}
		rel := strings.TrimPrefix(e.Loc, base)
		d := rs.NewDecoder(bytes.NewReader(docs[rel]))
		if _, err := d.Head(); err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		for {
			ce, err := d.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", rel, err)
			}
			recs = append(recs, changeRecord{ce.Loc, string(ce.MD.Change), ce.MD.DateTime.Time().Format(time.RFC3339Nano)})
		}
	}
	return recs
}

// TestReplicasEndToEnd: two serve replicas on one PostgreSQL database and
// one directory, behind a round-robin balancer: identical documents, a
// sync through the balancer, the scanner replica SIGKILLed, changes, the
// other takes over; the incremental sync ends byte-identical, the
// documents validate and the Change Lists are contiguous with each change
// exactly once.
func TestReplicasEndToEnd(t *testing.T) {
	pgURL := pgtest.Database(t)
	loopbackOnly(t)
	syncLoopbackOnly(t)
	n := 300
	if testing.Short() {
		n = 40
	}
	dir := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		write(fmt.Sprintf("d%d/f%04d.txt", i%7, i), strings.Repeat(fmt.Sprint(i), 1+i%50))
	}

	lb := &balancer{}
	lbLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lbSrv := &http.Server{Handler: lb}
	go lbSrv.Serve(lbLn)
	t.Cleanup(func() { lbSrv.Close() })
	base := "http://" + lbLn.Addr().String() + "/"

	args := func(i int) []string {
		return []string{"--store", pgURL, "--state", filepath.Join(t.TempDir(), fmt.Sprintf("state%d", i)), "--base-url", base,
			"--no-hub", "--rescan-interval", "300ms", "--changelist-period", "1h", "--max-entries", fmt.Sprint(n / 6), dir}
	}
	reps := []*replicaProc{startReplicaProc(t, "A", args(0)...), startReplicaProc(t, "B", args(1)...)}
	lb.mu.Lock()
	lb.backends = []string{reps[0].addr, reps[1].addr}
	lb.mu.Unlock()

	// identical waits until every replica serves the same documents,
	// byte for byte, and ok accepts them.
	identical := func(what string, procs []*replicaProc, ok func(map[string][]byte) bool) map[string][]byte {
		t.Helper()
		var last string
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			var first map[string][]byte
			same := true
			for _, r := range procs {
				d, err := fetchDocs(r.addr, base)
				if err != nil {
					last, same = err.Error(), false
					break
				}
				if first == nil {
					first = d
					continue
				}
				for k, v := range first {
					if !bytes.Equal(v, d[k]) {
						last, same = fmt.Sprintf("%s differs between replicas", k), false
					}
				}
				if len(d) != len(first) {
					last, same = "replicas serve different sets of documents", false
				}
			}
			if same && ok(first) {
				return first
			}
			if same {
				last = "documents not yet as expected"
			}
		}
		t.Fatalf("%s: %s", what, last)
		return nil
	}
	hasEntries := func(k int) func(map[string][]byte) bool {
		return func(d map[string][]byte) bool {
			c := 0
			for rel, b := range d {
				if strings.Contains(rel, "/resourcelists/parts/") {
					c += bytes.Count(b, []byte("<url>"))
				}
			}
			return c == k
		}
	}
	docs := identical("baseline documents", reps, hasEntries(n))
	parts := 0
	for rel := range docs {
		if strings.Contains(rel, "/resourcelists/parts/") {
			parts++
		}
	}
	if parts < 6 {
		t.Errorf("%d Resource List parts, want the list split by key range", parts)
	}
	t.Logf("%d documents (%d Resource List parts) identical on both replicas", len(docs), parts)

	mirror := filepath.Join(t.TempDir(), "mirror")
	sync := func(what, want string) {
		t.Helper()
		code, out, errOut := runCLI(t, "sync", "--progress", "lines", base, mirror)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("%s: sync exit %d, want 0 and %q in the output\n%s\n%s", what, code, want, out, errOut)
		}
		sameTreeFiles(t, what, treeFiles(t, dir), treeFiles(t, mirror))
	}
	sync("baseline sync through the balancer", "baseline")

	// Changes journaled by the first scanner.
	time.Sleep(20 * time.Millisecond)
	write("d0/pre-new.txt", "created before the takeover")
	write("d1/f0001.txt", "updated before the takeover")
	hasChanges := func(k int) func(map[string][]byte) bool {
		return func(d map[string][]byte) bool {
			c := 0
			for rel, b := range d {
				if strings.Contains(rel, "/changelists/") {
					c += bytes.Count(b, []byte("<url>"))
				}
			}
			return c == k
		}
	}
	identical("documents after 2 changes", reps, hasChanges(2))

	var leader, other *replicaProc
	switch {
	case !reps[0].leadTime().IsZero() && reps[1].leadTime().IsZero():
		leader, other = reps[0], reps[1]
	case reps[0].leadTime().IsZero() && !reps[1].leadTime().IsZero():
		leader, other = reps[1], reps[0]
	default:
		t.Fatalf("not exactly one scanner: A %v, B %v", reps[0].leadTime(), reps[1].leadTime())
	}
	t.Logf("replica %s scans; SIGKILL", leader.name)
	killed := time.Now()
	if err := leader.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-leader.done
	leader.done <- nil // for the cleanup
	time.Sleep(20 * time.Millisecond)
	for i := range 3 {
		write(fmt.Sprintf("d%d/new%d.txt", i, i), "created after the kill "+fmt.Sprint(i))
	}
	write("d2/f0002.txt", "updated after the kill")
	write("d3/f0003.txt", "updated after the kill, too")
	os.Remove(filepath.Join(dir, "d4/f0004.txt"))
	os.Remove(filepath.Join(dir, "d5/f0005.txt"))

	docs = identical("documents after the takeover", []*replicaProc{other}, hasChanges(9))
	published := time.Since(killed)
	if other.leadTime().IsZero() {
		t.Fatalf("replica %s published without taking the scanner role", other.name)
	}
	t.Logf("takeover: replica %s took the scanner role %v after the SIGKILL; changes published %v after it",
		other.name, other.leadTime().Sub(killed).Round(time.Millisecond), published.Round(time.Millisecond))
	if d := other.leadTime().Sub(killed); d > 10*time.Second {
		t.Errorf("takeover took %v, want a few seconds", d)
	}

	// A new replica in the killed one's place renders the same bytes.
	c := startReplicaProc(t, "C", args(2)...)
	lb.mu.Lock()
	lb.backends = []string{other.addr, c.addr}
	lb.mu.Unlock()
	identical("documents with a new replica", []*replicaProc{other, c}, hasChanges(9))

	sync("incremental sync through the balancer after the takeover", "incremental: fetched 7")

	code, out, errOut := runCLI(t, "validate", base+".well-known/resourcesync")
	if code != 0 || !strings.Contains(out, " 0 errors") {
		t.Errorf("validate: exit %d\n%s\n%s", code, out, errOut)
	}

	recs := changeLists(t, docs, base)
	seen := map[changeRecord]bool{}
	paths := map[string][]string{}
	for _, r := range recs {
		if seen[r] {
			t.Errorf("duplicate change record %+v", r)
		}
		seen[r] = true
		p := strings.TrimPrefix(r.loc, base)
		paths[p] = append(paths[p], r.change)
	}
	want := map[string][]string{
		"d0/pre-new.txt": {"created"}, "d1/f0001.txt": {"updated"},
		"d0/new0.txt": {"created"}, "d1/new1.txt": {"created"}, "d2/new2.txt": {"created"},
		"d2/f0002.txt": {"updated"}, "d3/f0003.txt": {"updated"},
		"d4/f0004.txt": {"deleted"}, "d5/f0005.txt": {"deleted"},
	}
	for p, w := range want {
		if !slices.Equal(paths[p], w) {
			t.Errorf("records of %s: %v, want %v", p, paths[p], w)
		}
	}
	if len(recs) != len(want) {
		t.Errorf("%d change records, want %d (no gap, no duplicate)", len(recs), len(want))
	}
	// A one-shot publish on the same database waits for the scanner role,
	// which the serving replica holds: a clear error after leadWait.
	old := leadWait
	leadWait = 500 * time.Millisecond
	defer func() { leadWait = old }()
	code, out, errOut = runCLI(t, "publish", "--store", pgURL, "--state", t.TempDir(), "--out", t.TempDir(), "--base-url", base, dir)
	if code != exitUsage || !strings.Contains(errOut, "has held the scanner role") {
		t.Errorf("publish while a replica leads: exit %d\n%s\n%s", code, out, errOut)
	}

	hits := map[string]int64{}
	lb.hits.Range(func(k, v any) bool { hits[k.(string)] = v.(*atomic.Int64).Load(); return true })
	t.Logf("requests per replica through the balancer: %v", hits)
}
