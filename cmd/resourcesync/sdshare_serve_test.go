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
)

func TestSDShareServeUsage(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.nt")
	os.WriteFile(bad, []byte("<http://ex/a> <http://ex/p> .\n"), 0o644)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no collection", nil, "NAME=PATH"},
		{"not NAME=PATH", []string{"books"}, "NAME=PATH"},
		{"bad name", []string{"a/b=" + dir}, "collection name"},
		{"reserved name", []string{"metrics=" + dir}, "collection name"},
		{"missing path", []string{"c=" + filepath.Join(dir, "nope")}, "nope"},
		{"syntax error at start", []string{"c=" + bad}, "not valid RDF"},
		{"hub without resourcesync", []string{"--hub", "http://127.0.0.1:1/", "c=" + dir}, "--resourcesync"},
	} {
		args := append([]string{"sdshare", "serve", "--addr", "127.0.0.1:0", "--state", t.TempDir()}, c.args...)
		code, _, stderr := runCLI(t, args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want %d and %q", c.name, code, stderr, exitUsage, c.want)
		}
	}
	code, out, _ := runCLI(t, "sdshare", "serve", "--help")
	for _, want := range []string{"URLS", "FORMATS", "STATE", "PUSH", "406", "--push"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("--help (exit %d) does not explain %s", code, want)
		}
	}
}

// TestSDShareServeRuns: the command serves the overview feed and stops
// with exit 0 when its context ends.
func TestSDShareServeRuns(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.nt"), []byte("<http://ex/a> <http://ex/p> \"1\" .\n"), 0o644)
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
		done <- run(ctx, []string{"resourcesync", "sdshare", "serve", "--addr", addr, "--state", t.TempDir(), "books=" + dir}, &out, &errb)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "serving SDShare") {
		if time.Now().After(deadline) {
			t.Fatalf("not serving: %s %s", out.String(), errb.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "http://"+addr+"/books/") {
		t.Errorf("overview: %s\n%s", resp.Status, body)
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, errb.String())
	}
}
