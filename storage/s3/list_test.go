package s3

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/storage"
)

// TestListReadsAhead: List asks for the next page while it hands out the
// one it has, so that a scan's work on a page and the server's on the
// next overlap (a rescan by listing costs about one listing); it still
// keeps at most two pages, hands out every key once in order, and a
// callback's error ends it.
func TestListReadsAhead(t *testing.T) {
	tb := newTestBucket(t)
	root := filepath.Join(tb.srv.Root, tb.name, "pre")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 2500 // three pages
	for i := range n {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("k%05d", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p := tb.srv.FaultProxy(t)
	c := tb.content(t, p.Endpoint)
	ctx := context.Background()
	before := p.Requests("GET")
	seen := 0
	err := c.List(ctx, "", func(in storage.Info) error {
		if want := fmt.Sprintf("k%05d", seen); in.Key != want {
			return fmt.Errorf("key %d is %q, want %q", seen, in.Key, want)
		}
		if seen == 0 || seen == 1000 {
			deadline := time.Now().Add(10 * time.Second)
			for p.Requests("GET")-before < seen/1000+2 {
				if time.Now().After(deadline) {
					return fmt.Errorf("page %d handed out before the next one was asked for (%d LISTs)", seen/1000+1, p.Requests("GET")-before)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		seen++
		return nil
	})
	if err != nil || seen != n {
		t.Fatalf("List: %d keys, %v", seen, err)
	}
	stop := errors.New("stop")
	seen = 0
	if err := c.List(ctx, "k01500", func(in storage.Info) error {
		if seen++; seen == 10 {
			return stop
		}
		return nil
	}); !errors.Is(err, stop) || seen != 10 {
		t.Fatalf("List stopped by its callback: %v after %d keys", err, seen)
	}
}

// TestListCanceled: a listing whose context ends while a page is being
// fetched fails; it never reads as a complete, shorter one.
func TestListCanceled(t *testing.T) {
	tb := newTestBucket(t)
	root := filepath.Join(tb.srv.Root, tb.name, "pre")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 1500 {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("k%05d", i)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := tb.content(t, "")
	for range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		seen := 0
		err := c.List(ctx, "", func(storage.Info) error {
			if seen++; seen == 999 {
				cancel()
			}
			return nil
		})
		cancel()
		if err == nil && seen != 1500 {
			t.Fatalf("a canceled List returned no error after %d of 1500 keys", seen)
		}
	}
}
