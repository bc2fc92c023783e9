package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a
// command running in a goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// background runs a command until the test ends (or stop is called) and
// returns its output.
func background(t *testing.T, args ...string) (out *syncBuffer, stop func() int) {
	ctx, cancel := context.WithCancel(context.Background())
	out = &syncBuffer{}
	done := make(chan int, 1)
	go func() { done <- run(ctx, append([]string{"resourcesync"}, args...), out, out) }()
	var once sync.Once
	code := -1
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(20 * time.Second):
				t.Errorf("%v did not stop:\n%s", args, out)
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	return out, stop
}

func waitFor(t *testing.T, what string, d time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServeWatchFollow: serve --watch with its embedded hub, and
// sync --follow; a file changed in the Source directory appears with the
// right bytes in DEST, pushed by a change notification.
func TestServeWatchFollow(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	for i := range 5 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), []byte(fmt.Sprint("v1 ", i)), 0o644)
	}
	addr := freeAddr(t)
	base := "http://" + addr + "/"
	sout, stopServe := background(t, "serve", "--addr", addr, "--watch", "--rescan-interval", "0", "--allow-private-callbacks", "--state", t.TempDir(), dir)
	waitFor(t, "the Source", 10*time.Second, func() bool { return strings.Contains(sout.String(), "change notifications") })

	dest := t.TempDir()
	fout, stopFollow := background(t, "sync", "--follow", "--listen", freeAddr(t), "--poll-interval", "1h", base, dest)
	waitFor(t, "the subscription", 15*time.Second, func() bool { return strings.Contains(fout.String(), "subscribed to") })
	if b, err := os.ReadFile(filepath.Join(dest, "f3.txt")); err != nil || string(b) != "v1 3" {
		t.Fatalf("baseline: %q %v\n%s", b, err, fout)
	}
	for round := range 3 {
		body := fmt.Sprintf("changed %d", round)
		start := time.Now()
		os.WriteFile(filepath.Join(dir, "f1.txt"), []byte(body), 0o644)
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("new%d.txt", round)), []byte(body), 0o644)
		waitFor(t, "the pushed change", 15*time.Second, func() bool {
			a, _ := os.ReadFile(filepath.Join(dest, "f1.txt"))
			b, _ := os.ReadFile(filepath.Join(dest, fmt.Sprintf("new%d.txt", round)))
			return string(a) == body && string(b) == body
		})
		t.Logf("round %d: in DEST %v after the write", round, time.Since(start).Round(time.Millisecond))
	}
	os.Remove(filepath.Join(dir, "f0.txt"))
	waitFor(t, "the pushed deletion", 15*time.Second, func() bool {
		_, err := os.Stat(filepath.Join(dest, "f0.txt"))
		return os.IsNotExist(err)
	})
	if !strings.Contains(fout.String(), "notification on default") {
		t.Errorf("changes did not come by notification:\n%s", fout)
	}
	if code := stopFollow(); code != 0 {
		t.Errorf("follow exit %d:\n%s", code, fout)
	}
	if !strings.Contains(fout.String(), "stopped") {
		t.Errorf("follow did not stop cleanly:\n%s", fout)
	}
	stopServe()
}

// TestFollowEphemeralPorts: two sync --follow at once, neither given
// --listen or --callback-url, both subscribe (each on an ephemeral
// loopback port the hub is told) and both receive a change by
// notification; the startup output and the status page say which port
// and that it is ephemeral (issue 32, item 6: a fixed 8091 made the
// second fail to bind).
func TestFollowEphemeralPorts(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("v1"), 0o644)
	addr := freeAddr(t)
	base := "http://" + addr + "/"
	sout, _ := background(t, "serve", "--addr", addr, "--watch", "--rescan-interval", "0", "--allow-private-callbacks", "--state", t.TempDir(), dir)
	waitFor(t, "the Source", 10*time.Second, func() bool { return strings.Contains(sout.String(), "change notifications") })

	statusAddr := freeAddr(t)
	dests := []string{t.TempDir(), t.TempDir()}
	var outs []*syncBuffer
	for i, dest := range dests {
		args := []string{"sync", "--follow", "--poll-interval", "1h"}
		if i == 0 {
			args = append(args, "--status-addr", statusAddr)
		}
		out, _ := background(t, append(args, base, dest)...)
		outs = append(outs, out)
	}
	cbRE := regexp.MustCompile(`callback (http://127\.0\.0\.1:(\d+)/), an ephemeral port`)
	var callbacks []string
	for i, out := range outs {
		waitFor(t, fmt.Sprintf("follower %d's subscription", i), 15*time.Second, func() bool {
			// Without --listen, serve's live push replaces the hub.
			return strings.Contains(out.String(), "live push for set") || strings.Contains(out.String(), "resourcesync: ")
		})
		m := cbRE.FindStringSubmatch(out.String())
		if m == nil || m[2] == "8091" {
			t.Fatalf("follower %d does not say its ephemeral callback:\n%s", i, out)
		}
		callbacks = append(callbacks, m[1])
	}
	if callbacks[0] == callbacks[1] {
		t.Fatalf("both followers on %s", callbacks[0])
	}
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("v2"), 0o644)
	for i, dest := range dests {
		// The line of the notification is printed once it is applied.
		waitFor(t, fmt.Sprintf("the change in follower %d's DEST, by notification", i), 15*time.Second, func() bool {
			b, _ := os.ReadFile(filepath.Join(dest, "a.txt"))
			return string(b) == "v2" && strings.Contains(outs[i].String(), "notification on default")
		})
	}
	for _, page := range []string{"status.json", ""} {
		resp, err := http.Get("http://" + statusAddr + "/" + page)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), callbacks[0]) || !strings.Contains(string(b), "ephemeral") {
			t.Errorf("the status page /%s does not say the callback %s is on an ephemeral port:\n%s", page, callbacks[0], b)
		}
	}
}
