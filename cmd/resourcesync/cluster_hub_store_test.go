package main

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/boltstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/pgstore"
)

// TestHubStoreFlagErrors: a --store the hub cannot use is a usage error
// that says why (and hides a password).
func TestHubStoreFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown scheme", []string{"--store", "mysql://u:secret@h/db"}, `want bolt:DIR or postgres://`},
		{"empty bolt path", []string{"--store", "bolt:"}, "no DIR"},
		{"bolt and state differ", []string{"--store", "bolt:" + t.TempDir(), "--state", t.TempDir()}, "two different directories"},
		{"import without postgres", []string{"--store", "bolt:" + t.TempDir(), "--import-state", t.TempDir()}, "--import-state needs a postgres:// --store"},
		{"unreachable postgres", []string{"--store", "postgres://u:secret@127.0.0.1:1/db?sslmode=disable&connect_timeout=2"}, "--store postgres://u:xxxxx@127.0.0.1:1/db"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"resourcesync", "hub", "--addr", "127.0.0.1:0"}, tc.args...)
			code := run(context.Background(), args, &out, &errb)
			if code != exitUsage || !strings.Contains(errb.String(), tc.want) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, errb.String(), exitUsage, tc.want)
			}
			if strings.Contains(errb.String(), "secret") {
				t.Fatalf("password in the message: %q", errb.String())
			}
		})
	}
}

// runHub runs `resourcesync hub args...` in-process until it answers
// /healthz, and returns a function that stops it and returns its stdout.
func runHub(t *testing.T, args ...string) (addr string, stop func() string) {
	t.Helper()
	addr = freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"resourcesync", "hub", "--addr", addr}, args...), &out, &errb)
	}()
	client, _ := testnet.Client(t)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := client.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case code := <-done:
			cancel()
			t.Fatalf("hub exited %d: %s", code, errb.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("hub not healthy: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return addr, func() string {
		cancel()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("hub exit %d: %s", code, errb.String())
			}
		case <-time.After(15 * time.Second):
			t.Fatal("hub did not stop")
		}
		return out.String()
	}
}

// TestHubStoreBoltAndImport: --store bolt:DIR is the embedded store in
// DIR/hub.db; --import-state DIR moves that state into an empty
// PostgreSQL database on start; importing into a database that holds a
// hub's state is refused.
func TestHubStoreBoltAndImport(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	_, stop := runHub(t, "--store", "bolt:"+dir)
	if out := stop(); !strings.Contains(out, "state in "+dir) {
		t.Fatalf("stdout %q", out)
	}
	// A state with a subscription, a log and a pending job, as a hub
	// leaves it.
	bs, err := boltstore.Open(filepath.Join(dir, "hub.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	topic := "http://127.0.0.1:1/t"
	for range 3 {
		if _, err := bs.Append(ctx, topic, hubstore.Entry{ContentType: "application/xml", Body: []byte("<x/>")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := bs.PutSubscription(ctx, hubstore.Subscription{Key: topic + "\x00http://127.0.0.1:2/cb", Topic: topic,
		Callback: "http://127.0.0.1:2/cb", Lease: 3600, Expires: time.Now().Add(time.Hour), Cursor: 2}); err != nil {
		t.Fatal(err)
	}
	bs.Close()

	pgtest.Skip(t)
	db := pgtest.Database(t)
	_, stop = runHub(t, "--store", db, "--import-state", dir)
	out := stop()
	if !strings.Contains(out, "1 topics, 3 log entries, 1 subscriptions") {
		t.Fatalf("stdout %q", out)
	}
	ps, err := pgstore.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	if r, err := ps.GetSubscription(ctx, topic+"\x00http://127.0.0.1:2/cb"); err != nil || r.Cursor != 2 {
		t.Fatalf("imported subscription %+v %v", r, err)
	}
	var errb bytes.Buffer
	code := run(ctx, []string{"resourcesync", "hub", "--addr", freeAddr(t), "--store", db, "--import-state", dir}, &bytes.Buffer{}, &errb)
	if code != exitUsage || !strings.Contains(errb.String(), "already holds hub state") {
		t.Fatalf("second import: exit %d, %q", code, errb.String())
	}
}
