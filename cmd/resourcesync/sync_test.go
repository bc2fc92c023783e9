package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/source"
)

// syncLoopbackOnly makes sync's client dial only loopback.
func syncLoopbackOnly(t *testing.T) {
	old := syncClient
	t.Cleanup(func() { syncClient = old })
	c, _ := testnet.Client(t)
	syncClient = func(int, time.Duration) *http.Client { return c }
}

func serveDir(t *testing.T, dir string) (base string, update func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base = "http://" + ln.Addr().String() + "/"
	src, err := source.Open(source.Config{BaseURL: base, Sets: []source.SetConfig{{Name: "default", Dir: dir}}, StateDir: t.TempDir(),
		ChangeListPeriod: time.Hour, Logger: discardLogger(), AllowEmpty: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close() })
	update = func() {
		time.Sleep(5 * time.Millisecond)
		if _, err := src.Update(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	update()
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: src.Handler(nil)}}
	srv.Start()
	t.Cleanup(srv.Close)
	return base, update
}

func TestSyncCommand(t *testing.T) {
	syncLoopbackOnly(t)
	dir := t.TempDir()
	for i := range 30 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.txt", i)), []byte(strings.Repeat("x", i)), 0o644)
	}
	base, update := serveDir(t, dir)
	dest := filepath.Join(t.TempDir(), "mirror")

	// --dry-run touches nothing.
	code, out, errOut := runCLI(t, "sync", "--dry-run", "--progress", "quiet", base, dest)
	if code != 0 || !strings.Contains(out, "would fetch 30") {
		t.Fatalf("dry run: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, err := os.Stat(dest); !os.IsNotExist(err) {
		t.Fatalf("dry run created %s", dest)
	}

	// --json: one event per line, then the summary.
	code, out, errOut = runCLI(t, "sync", "--json", base, dest)
	if code != 0 {
		t.Fatalf("sync: exit %d\n%s\n%s", code, out, errOut)
	}
	var last map[string]any
	fetched := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("not JSON: %q", sc.Text())
		}
		if m["event"] == "fetched" {
			fetched++
		}
		last = m
	}
	if fetched != 30 || last["event"] != "summary" || last["ok"] != true {
		t.Fatalf("%d fetched events; last %v", fetched, last)
	}

	// Audit clean, then a difference: exit 1 and a table row.
	if code, out, _ = runCLI(t, "sync", "--audit", "--progress", "quiet", base, dest); code != 0 || !strings.Contains(out, "30 in sync") {
		t.Fatalf("audit: exit %d\n%s", code, out)
	}
	os.WriteFile(filepath.Join(dest, "f03.txt"), []byte("changed"), 0o644)
	if code, out, _ = runCLI(t, "sync", "--audit", "--progress", "quiet", base, dest); code != 1 || !strings.Contains(out, "changed       f03.txt") {
		t.Fatalf("audit with a difference: exit %d\n%s", code, out)
	}
	if code, out, _ = runCLI(t, "sync", "--audit", "--repair", "--progress", "lines", base, dest); code != 0 {
		t.Fatalf("repair: exit %d\n%s", code, out)
	}

	// Incremental, plain lines.
	os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new"), 0o644)
	os.Remove(filepath.Join(dir, "f00.txt"))
	update()
	code, out, errOut = runCLI(t, "sync", "--progress", "lines", base, dest)
	if code != 0 || !strings.Contains(out, "incremental: fetched 1") || !strings.Contains(out, "deleted 1") {
		t.Fatalf("incremental: exit %d\n%s\n%s", code, out, errOut)
	}
}

func TestSyncUsageErrors(t *testing.T) {
	syncLoopbackOnly(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	dest := t.TempDir()
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"no args", []string{"sync"}, 2},
		{"one arg", []string{"sync", srv.URL}, 2},
		{"baseline and audit", []string{"sync", "--baseline", "--audit", srv.URL, dest}, 2},
		{"repair without audit", []string{"sync", "--repair", srv.URL, dest}, 2},
		{"bad progress", []string{"sync", "--progress", "fancy", srv.URL, dest}, 2},
		{"nothing to discover", []string{"sync", "--progress", "quiet", srv.URL + "/", dest}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if code, out, errOut := runCLI(t, tc.args...); code != tc.want {
				t.Errorf("exit %d, want %d\n%s\n%s", code, tc.want, out, errOut)
			}
		})
	}
}

func TestDemo(t *testing.T) {
	syncLoopbackOnly(t)
	code, out, errOut := runCLI(t, "demo", "--files", "60")
	if code != 0 || !strings.Contains(out, "identical") || !strings.Contains(out, "incremental: fetched 23") {
		t.Fatalf("demo: exit %d\n%s\n%s", code, out, errOut)
	}
}
