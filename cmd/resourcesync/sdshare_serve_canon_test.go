package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSDShareServeCanonicalBudget: --max-canonical-steps reaches the
// server: a fragment of blank nodes in cycles beyond it is logged and
// counted on /healthz (issue 24 item 12), and still served.
func TestSDShareServeCanonicalBudget(t *testing.T) {
	dir := t.TempDir()
	var doc strings.Builder
	for k := range 20 {
		fmt.Fprintf(&doc, "<http://ex/r> <http://ex/has> _:c%d_0 .\n", k)
		for i := range 3 {
			fmt.Fprintf(&doc, "_:c%d_%d <http://ex/next> _:c%d_%d .\n", k, i, k, (i+1)%3)
		}
	}
	os.WriteFile(filepath.Join(dir, "a.nt"), []byte(doc.String()), 0o644)
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
		done <- run(ctx, []string{"resourcesync", "sdshare", "serve", "--addr", addr, "--state", t.TempDir(),
			"--max-canonical-steps", "50", "books=" + dir}, &out, &errb)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(out.String(), "serving SDShare") {
		if time.Now().After(deadline) {
			t.Fatalf("not serving: %s %s", out.String(), errb.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	get := func(u string) string {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: %s", u, resp.Status)
		}
		return string(b)
	}
	if h := get("http://" + addr + "/healthz"); !strings.Contains(h, "degraded") || !strings.Contains(h, "1 fragments beyond the canonical labelling budget") {
		t.Errorf("healthz: %s", h)
	}
	if f := get("http://" + addr + "/books/fragment?resource=http%3A%2F%2Fex%2Fr"); strings.Count(f, "\n") != 80 {
		t.Errorf("the fragment over budget is not served whole: %d lines", strings.Count(f, "\n"))
	}
	if !strings.Contains(errb.String(), "beyond the canonical labelling budget") {
		t.Errorf("not logged: %s", errb.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d: %s", code, errb.String())
	}
}
