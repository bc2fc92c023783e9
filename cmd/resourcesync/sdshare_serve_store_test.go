package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/pgtest"
	"github.com/resourcesync-go/resourcesync/source/store/pgstore"
)

// TestSDShareServeStoreUsage: --store takes the spellings of the other
// commands' --store, with their messages.
func TestSDShareServeStoreUsage(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown scheme", []string{"--store", "mysql://u:secret@h/db"}, "want bolt:DIR or postgres://"},
		{"empty bolt path", []string{"--store", "bolt:"}, "no DIR"},
		{"bolt and state differ", []string{"--store", "bolt:" + t.TempDir(), "--state", t.TempDir()}, "two different directories"},
	} {
		args := append(append([]string{"sdshare", "serve", "--addr", "127.0.0.1:0"}, c.args...), "c="+dir)
		code, stdout, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || strings.Contains(stdout+stderr, "secret") {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", c.name, code, stderr, exitUsage, c.want)
		}
	}
}

// TestSDShareServeStorePostgres: with --store postgres://... the
// collection's journal lives in the database (set sdshare.NAME), not in
// --state: a restart with a fresh --state resumes it, and a change made
// while the server was down is journaled as an update, not a new
// baseline.
func TestSDShareServeStorePostgres(t *testing.T) {
	pgtest.Skip(t)
	db := pgtest.Database(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.nt"), []byte("<http://ex/a> <http://ex/p> \"1\" .\n"), 0o644)
	serveOnce := func(state string, check func(base string)) {
		t.Helper()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		ctx, cancel := context.WithCancel(context.Background())
		var out, errb syncBuffer
		done := make(chan int, 1)
		go func() {
			done <- run(ctx, []string{"resourcesync", "sdshare", "serve", "--addr", addr, "--state", state, "--store", db, "books=" + dir}, &out, &errb)
		}()
		for !strings.Contains(out.String(), "serving SDShare") {
			select {
			case code := <-done:
				cancel()
				t.Fatalf("exit %d: %s", code, errb.String())
			case <-time.After(5 * time.Millisecond):
			}
		}
		check("http://" + addr + "/")
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("exit %d: %s", code, errb.String())
		}
	}
	get := func(u string) string {
		t.Helper()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %s", u, resp.Status)
		}
		return string(b)
	}
	state1 := t.TempDir()
	serveOnce(state1, func(base string) {
		if f := get(base + "books/fragments"); strings.Contains(f, "<entry") {
			t.Errorf("baseline journaled:\n%s", f)
		}
	})
	if m, _ := filepath.Glob(filepath.Join(state1, "*.state")); len(m) != 0 {
		t.Errorf("embedded state files with --store postgres://: %v", m)
	}
	st, err := pgstore.Open(context.Background(), db, "sdshare.books", nil)
	if err != nil {
		t.Fatal(err)
	}
	stats, err := st.Stats(context.Background())
	st.Close()
	if err != nil || stats.Resources != 1 {
		t.Fatalf("set sdshare.books: %+v, %v; want 1 resource", stats, err)
	}
	os.WriteFile(filepath.Join(dir, "a.nt"), []byte("<http://ex/a> <http://ex/p> \"2\" .\n"), 0o644)
	serveOnce(t.TempDir(), func(base string) {
		if f := get(base + "books/fragments"); strings.Count(f, "<entry") != 1 || !strings.Contains(f, "http://ex/a") {
			t.Errorf("want the change of http://ex/a made while down, once:\n%s", f)
		}
	})
}

// TestSDShareServeStoreSecrets: whatever goes wrong with a postgres://
// --store, its password reaches neither stdout nor stderr.
func TestSDShareServeStoreSecrets(t *testing.T) {
	const pw = "S3CRETpw"
	dir := t.TempDir()
	for _, su := range []string{
		"postgres://u:" + pw + "@127.0.0.1:1/db?sslmode=disable",
		"postgres://u@127.0.0.1:1/db?sslmode=disable&password=" + pw,
		"postgres://u:" + pw + "@127.0.0.1:notaport/db?password=" + pw,
		"postgres://u:" + pw + "@[::1/db",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		code, stdout, stderr := runCLICtx(ctx, "sdshare", "serve", "--addr", "127.0.0.1:0", "--store", su, "--state", t.TempDir(), "c="+dir)
		cancel()
		if code != exitUsage || strings.Contains(stdout+stderr, pw) {
			t.Errorf("--store %s: exit %d, want %d and no password:\n%s%s", redactURL(su), code, exitUsage, stdout, stderr)
		}
	}
}
