package main

import (
	"context"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore/boltstore"
)

// TestSDShareReceiveCommand runs the receiver on a free loopback port with
// the embedded store, pushes the bnode-closure fixture to it, stops it
// with a cancelled context (as Ctrl-C does), and reads the store.
func TestSDShareReceiveCommand(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := runCLICtx(ctx, "sdshare", "receive", "--addr", addr, "--store", dir, "--graph", "http://psi.test.no/graph")
		done <- result{code, out, errOut}
	}()
	hc, _ := testnet.Client(t)
	base := "http://" + addr
	for {
		resp, err := hc.Get(base + "/ping")
		if err == nil {
			resp.Body.Close()
			break
		}
		select {
		case r := <-done:
			t.Fatalf("receive exited: %d %s %s", r.code, r.out, r.err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	body, err := os.ReadFile("../../testdata/sdshare/push/bnode-closure.nt")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query string
		code  int
	}{
		{"resource=" + url.QueryEscape("http://psi.test.no/1"), 200},
		{"resource=" + url.QueryEscape("http://psi.test.no/2"), 400},
	} {
		resp, err := hc.Post(base+"/?"+tc.query, "application/n-triples", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s: %d %s", tc.query, resp.StatusCode, msg)
		}
	}
	cancel()
	r := <-done
	if r.code != 0 || !strings.Contains(r.err, "listening on http://"+addr) {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.out, r.err)
	}
	if !strings.Contains(r.err, "not a subject") {
		t.Errorf("the refused request is not logged: %s", r.err)
	}
	s, err := boltstore.OpenDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 0
	for _, err := range s.Triples(context.Background(), "http://psi.test.no/graph") {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 6 {
		t.Errorf("store holds %d triples, want 6", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "sdshare-receive.order")); err != nil {
		t.Errorf("order file: %v", err)
	}
	code, _, errOut := runCLI(t, "sdshare", "receive", "--store", dir, "--sparql-update", "http://127.0.0.1:1/")
	if code != 2 || !strings.Contains(errOut, "exclude") {
		t.Errorf("usage: %d %s", code, errOut)
	}
}
