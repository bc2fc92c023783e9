package main

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
)

// TestRedactURL: every place pgx reads a password from is hidden.
func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://u:pw@h:5432/db", "postgres://u:xxxxx@h:5432/db"},
		{"postgres://u@h/db", "postgres://u@h/db"},
		{"postgres://h/db?sslmode=disable", "postgres://h/db?sslmode=disable"},
		{"postgres://u@h/db?sslmode=disable&password=pw", "postgres://u@h/db?password=xxxxx&sslmode=disable"},
		{"postgresql://u@h/db?PassWord=pw", "postgresql://u@h/db?PassWord=xxxxx"},
		{"postgres://u@h/db?pass%77ord=pw", "postgres://u@h/db?password=xxxxx"},
		{"postgres://u@h/db?sslpassword=pw", "postgres://u@h/db?sslpassword=xxxxx"},
		{"postgres://u:p/w?x@y@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://u@h/db?password=%zzpw", "postgres://u@h/db?xxxxx"},
		{"mysql://u:pw@h/db", "mysql://u:xxxxx@h/db"},
		{"host=h password=pw user=u", "host=h password=xxxxx user=u"},
		{"host=h password = 'p w\\' x' user=u", "host=h password = xxxxx user=u"},
		{"host=h sslpassword=pw", "host=h sslpassword=xxxxx"},
	} {
		if got := redactURL(tc.in); got != tc.want {
			t.Errorf("redactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := redactURL(tc.in); strings.Contains(got, "pw") || strings.Contains(got, "p w") {
			t.Errorf("redactURL(%q) = %q: password left", tc.in, got)
		}
	}
}

// TestStoreURLSecrets: whatever goes wrong with a postgres:// --store (or
// nothing), no password reaches stdout or stderr of serve, publish or hub,
// wherever the URL holds it.
func TestStoreURLSecrets(t *testing.T) {
	pgtest.Skip(t)
	db := pgtest.Database(t)
	host := must(url.Parse(db)).Host
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	const pw = "S3CRETpw"
	urls := []string{
		"postgres://u:" + pw + "@127.0.0.1:1/db?sslmode=disable",
		"postgres://u@127.0.0.1:1/db?sslmode=disable&password=" + pw,
		"postgres://u:" + pw + "@127.0.0.1:notaport/db?password=" + pw,
		"postgres://u:" + pw + "@127.0.0.1:1/db?sslmode=bogus&password=" + pw,
		"postgres://u:" + pw + "@[::1/db",
		"postgres://nosuchrole@" + host + "/postgres?sslmode=disable&password=" + pw,
		"postgres://postgres@" + host + "/nosuchdb?sslmode=disable&password=" + pw,
		"host=127.0.0.1 port=1 password=" + pw,
		strings.Replace(db, "postgres@", "postgres:"+pw+"@", 1) + "&sslpassword=" + pw, // works: trust auth
	}
	for _, su := range urls {
		for _, args := range [][]string{
			{"publish", "--store", su, "--base-url", "http://127.0.0.1/", "--out", t.TempDir(), "--state", t.TempDir(), "--no-dumps", dir},
			{"hub", "--addr", "127.0.0.1:0", "--store", su},
			{"serve", "--addr", "127.0.0.1:0", "--store", su, "--state", t.TempDir(), "--base-url", "http://127.0.0.1/", dir},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			code, stdout, stderr := runCLICtx(ctx, args...)
			cancel()
			if strings.Contains(stdout+stderr, pw) {
				t.Errorf("%s --store %s: exit %d, password in the output:\n%s%s", args[0], redactURL(su), code, stdout, stderr)
			}
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestStoreURLFromEnv: the URL (with its password) may come from
// $RESOURCESYNC_STORE, out of sight of ps; --help does not show it.
func TestStoreURLFromEnv(t *testing.T) {
	const pw = "S3CRETpw"
	t.Setenv("RESOURCESYNC_STORE", "postgres://u:"+pw+"@127.0.0.1:1/db?sslmode=disable")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	code, stdout, stderr := runCLI(t, "publish", "--base-url", "http://127.0.0.1/", "--out", t.TempDir(), "--state", t.TempDir(), dir)
	if code == 0 || !strings.Contains(stderr, "127.0.0.1:1") || strings.Contains(stdout+stderr, pw) {
		t.Errorf("publish with $RESOURCESYNC_STORE: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, c := range []string{"publish", "serve", "simulate"} {
		_, stdout, stderr := runCLI(t, c, "--help")
		if strings.Contains(stdout+stderr, pw) || !strings.Contains(stdout, "RESOURCESYNC_STORE") {
			t.Errorf("%s --help:\n%s%s", c, stdout, stderr)
		}
	}
}
