package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// floodNofile is the descriptor limit of the servers under the flood:
// a cap of (128 - 64) / 2 = 32 connections (internal/httpserver).
const floodNofile = 128

// TestIdleFloodServers: each server, in a child process whose descriptor
// limit is floodNofile (prlimit), is flooded with many more connections
// than it has descriptors: a third idle after a keep-alive request, a
// third silent, a third sending half their headers. A legitimate client
// is then still served. On main, the idle keep-alive connections are
// never closed and the accepts fail with EMFILE: the client waits for a
// descriptor that never frees.
func TestIdleFloodServers(t *testing.T) {
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) not installed")
	}
	dir := t.TempDir()
	coll := filepath.Join(dir, "coll")
	os.MkdirAll(coll, 0o755)
	os.WriteFile(filepath.Join(coll, "a.txt"), []byte("a resource\n"), 0o644)
	rdf := filepath.Join(dir, "g.nt")
	os.WriteFile(rdf, []byte("<http://example.org/a> <http://example.org/p> \"1\" .\n"), 0o644)
	for _, tc := range []struct {
		name string
		args func(addr string) []string
		path string
	}{
		{"serve", func(a string) []string {
			return []string{"serve", "--addr", a, "--state", filepath.Join(dir, "serve-state"), "--rescan-interval", "0", coll}
		}, "/.well-known/resourcesync"},
		{"sdshare serve", func(a string) []string {
			return []string{"sdshare", "serve", "--addr", a, "--state", filepath.Join(dir, "sds-state"), "col=" + rdf}
		}, "/healthz"},
		{"hub", func(a string) []string {
			return []string{"hub", "--addr", a, "--state", filepath.Join(dir, "hub-state")}
		}, "/healthz"},
		{"sdshare receive", func(a string) []string {
			return []string{"sdshare", "receive", "--addr", a, "--store", filepath.Join(dir, "rcv-store")}
		}, "/"},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			addr := freeAddr(t)
			cmd := memCmd(tc.args(addr)...)
			cmd.Path, cmd.Args = prlimit, []string{"prlimit", fmt.Sprintf("--nofile=%d:%d", floodNofile, floodNofile), "--", os.Args[0]}
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			url := "http://" + addr + tc.path
			waitFor(t, tc.name+" listening", time.Minute, func() bool {
				resp, err := http.Get(url)
				if err == nil {
					resp.Body.Close()
				}
				return err == nil
			})
			const flood = 600
			var conns []net.Conn
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			for i := range flood {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatalf("flood connection %d: %v", i, err)
				}
				conns = append(conns, c)
				switch i % 3 {
				case 0: // keep-alive: idle once answered (the answer left unread)
					fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", tc.path, addr)
				case 1: // slowloris
					fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHo", tc.path)
				}
			}
			fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid))
			// A new client, on a connection of its own; the timeout only
			// turns main's endless wait into a failure.
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 20 * time.Second}
			t0 := time.Now()
			resp, err := c.Get(url)
			if err != nil {
				t.Fatalf("legitimate client under a flood of %d connections (server descriptors %d, limit %d): %v\n%s", flood, len(fds), floodNofile, err, out.String())
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Fatalf("legitimate client: %s", resp.Status)
			}
			t.Logf("%s: %d flood connections, the server holding %d descriptors (limit %d): legitimate client answered %s in %v",
				tc.name, flood, len(fds), floodNofile, resp.Status, time.Since(t0).Round(time.Millisecond))
			// The keep-alive flood connections the server accepted first
			// were closed to make room.
			conns[0].SetReadDeadline(time.Now().Add(20 * time.Second))
			// Closed shows as EOF, or as a reset when the server closed it
			// before reading its request (still unread in the kernel).
			if b, err := io.ReadAll(conns[0]); err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("oldest idle flood connection: %v after %q, want closed", err, b)
			}
		})
	}
}
