package hub

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

const childStateEnv = "RESOURCESYNC_HUB_TEST_CHILD_STATE"

// TestHubChildProcess is not a test: it is the hub process that
// TestDurabilityKill9 starts (re-executing the test binary) and kills.
func TestHubChildProcess(t *testing.T) {
	dir := os.Getenv(childStateEnv)
	if dir == "" {
		t.Skip("helper process for TestDurabilityKill9")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := fastConfig(dir)
	cfg.NoSync = false // real fsyncs: the point is durability
	cfg.URL = "http://" + ln.Addr().String() + "/"
	cfg.MaxConcurrentPerHost = 8
	cfg.LookupIP = func(context.Context, string) ([]net.IP, error) { return nil, fmt.Errorf("no DNS in tests") }
	cfg.DialControl = func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !ap.Addr().Unmap().IsLoopback() {
			return fmt.Errorf("refused non-loopback %s", address)
		}
		return nil
	}
	h, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(ln, h)
	tmp := filepath.Join(dir, "addr.tmp")
	os.WriteFile(tmp, []byte(ln.Addr().String()), 0o600)
	os.Rename(tmp, filepath.Join(dir, "addr"))
	h.Run(context.Background()) // until killed
}

type childHub struct {
	cmd  *exec.Cmd
	addr string
}

func startChild(t *testing.T, dir string) *childHub {
	t.Helper()
	os.Remove(filepath.Join(dir, "addr"))
	cmd := exec.Command(os.Args[0], "-test.run=^TestHubChildProcess$", "-test.timeout=120s")
	cmd.Env = append(os.Environ(), childStateEnv+"="+dir)
	logf, err := os.OpenFile(filepath.Join(dir, "child.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &childHub{cmd: cmd}
	t.Cleanup(func() { c.kill() })
	waitFor(t, 20*time.Second, "the hub process to listen", func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "addr"))
		c.addr = string(b)
		return err == nil
	})
	return c
}

func (c *childHub) kill() {
	if c.cmd.ProcessState == nil {
		c.cmd.Process.Signal(syscall.SIGKILL)
		c.cmd.Wait()
	}
}

// recorder is a set of callbacks on one loopback server; it records the
// bodies each callback received, in arrival order.
type recorder struct {
	srv *httptest.Server
	mu  sync.Mutex
	got map[string][]int
	ver map[string]bool
	n   int
}

func newRecorder(t *testing.T, delay time.Duration) *recorder {
	r := &recorder{got: map[string][]int{}, ver: map[string]bool{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method == http.MethodGet {
			r.mu.Lock()
			r.ver[req.URL.Path] = true
			r.mu.Unlock()
			io.WriteString(w, req.URL.Query().Get("hub.challenge"))
			return
		}
		time.Sleep(delay)
		b, _ := io.ReadAll(req.Body)
		v, err := strconv.Atoi(strings.TrimPrefix(string(b), "n="))
		if err != nil {
			w.WriteHeader(400)
			return
		}
		r.mu.Lock()
		r.got[req.URL.Path] = append(r.got[req.URL.Path], v)
		r.n++
		r.mu.Unlock()
		w.WriteHeader(204)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// TestDurabilityKill9 kills the hub process with SIGKILL in the middle of
// a fan-out to many subscribers, restarts it on the same state, and checks
// that every subscriber received every acknowledged notification at least
// once, in order (a redelivery may repeat earlier ones, never skip).
func TestDurabilityKill9(t *testing.T) {
	const servers, perServer, notes = 5, 10, 30
	dir := t.TempDir()
	client, _ := testnet.Client(t)
	var recs []*recorder
	var callbacks []string
	for range servers {
		r := newRecorder(t, 3*time.Millisecond)
		recs = append(recs, r)
		for j := range perServer {
			callbacks = append(callbacks, r.srv.URL+"/cb/"+strconv.Itoa(j))
		}
	}
	topic := "http://127.0.0.1:1/changes/notification.xml"
	child := startChild(t, dir)
	hubURL := "http://" + child.addr + "/"
	for _, cb := range callbacks {
		resp, err := client.PostForm(hubURL, url.Values{"hub.mode": {"subscribe"}, "hub.topic": {topic}, "hub.callback": {cb}})
		if err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("subscribe: %v %v", resp, err)
		}
		resp.Body.Close()
	}
	total := func() (n int, verified int) {
		for _, r := range recs {
			r.mu.Lock()
			n += r.n
			verified += len(r.ver)
			r.mu.Unlock()
		}
		return
	}
	waitFor(t, 10*time.Second, "all verifications", func() bool { _, v := total(); return v == len(callbacks) })
	time.Sleep(300 * time.Millisecond) // the verified subscriptions commit right after the GET
	publish := func(hub string, i int) {
		req, _ := http.NewRequest(http.MethodPost, hub, strings.NewReader("n="+strconv.Itoa(i)))
		req.Header.Set("Content-Type", "text/plain")
		req.Header.Set("Link", "<"+topic+`>; rel="self", <`+hub+`>; rel="hub"`)
		resp, err := client.Do(req)
		if err != nil || resp.StatusCode != http.StatusAccepted {
			t.Fatalf("publish %d: %v %v", i, resp, err)
		}
		resp.Body.Close()
	}
	for i := range notes {
		publish(hubURL, i)
	}
	want := len(callbacks) * notes
	waitFor(t, 10*time.Second, "the fan-out to be under way", func() bool { n, _ := total(); return n >= want/4 })
	child.kill()
	atKill, _ := total()
	if atKill >= want {
		t.Fatalf("fan-out finished (%d deliveries) before the kill; the test proves nothing", atKill)
	}
	child2 := startChild(t, dir)
	hubURL = "http://" + child2.addr + "/"
	publish(hubURL, notes) // one more, after the restart
	waitFor(t, 20*time.Second, "every subscriber to get every notification", func() bool {
		for _, r := range recs {
			r.mu.Lock()
			for j := range perServer {
				got := r.got["/cb/"+strconv.Itoa(j)]
				if len(got) == 0 || got[len(got)-1] != notes {
					r.mu.Unlock()
					return false
				}
			}
			r.mu.Unlock()
		}
		return true
	})
	child2.kill()
	dups := 0
	for _, r := range recs {
		r.mu.Lock()
		for path, got := range r.got {
			seen := -1
			for _, v := range got {
				if v > seen+1 {
					t.Errorf("%s: got %d after %d: a notification was skipped (%v)", path, v, seen, got)
					break
				}
				if v <= seen {
					dups++
				}
				seen = max(seen, v)
			}
			if seen != notes {
				t.Errorf("%s: last %d, want %d", path, seen, notes)
			}
		}
		r.mu.Unlock()
	}
	t.Logf("killed after %d of %d deliveries; %d subscribers got all %d notifications in order; %d redeliveries after the restart",
		atKill, want, len(callbacks), notes+1, dups)
}
