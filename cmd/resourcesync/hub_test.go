package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

func TestHubCommandServesAndShutsDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"resourcesync", "hub", "--addr", addr, "--state", t.TempDir()}, &out, &errb)
	}()
	client, _ := testnet.Client(t)
	base := "http://" + addr
	var resp *http.Response
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err = client.Get(base + "/healthz")
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Without --allow-private-callbacks a loopback callback is refused.
	resp, err = client.PostForm(base+"/", url.Values{"hub.mode": {"subscribe"}, "hub.topic": {"http://127.0.0.1:1/t"}, "hub.callback": {"http://127.0.0.1:1/cb"}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "refused") {
		t.Errorf("loopback callback: %d %s", resp.StatusCode, b)
	}
	resp, err = client.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "websub_hub_refused_addresses_total 1") {
		t.Errorf("metrics:\n%s", b)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("hub did not shut down")
	}
	if !strings.Contains(out.String(), "hub at http://"+addr+"/") {
		t.Errorf("stdout: %q", out.String())
	}
}
