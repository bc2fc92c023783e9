package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/source/store/bolt"
)

// TestOAIServeDoesNotStarvePublish: 16 harvesters asking oai serve
// (without --mirror) for pages back to back keep the state's shared lock
// held by some request at every instant; publish, which needs the lock
// exclusively and gives up after a second, must still get it, and soon:
// oai serve (oai/provider/readstore) lets go of the state at least every
// quarter of a second for a pause a waiting writer's polls cannot miss.
func TestOAIServeDoesNotStarvePublish(t *testing.T) {
	dir, out, state := t.TempDir(), t.TempDir(), t.TempDir()
	for i := range 200 {
		os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%03d.txt", i)), []byte(fmt.Sprint("v1 ", i)), 0o644)
	}
	publish := func() (time.Duration, int, string) {
		t0 := time.Now()
		code, o, e := runCLI(t, "publish", "--base-url", "http://data.example.org/", "--out", out, "--state", state, dir)
		return time.Since(t0), code, o + e
	}
	if _, code, o := publish(); code != 0 {
		t.Fatalf("publish: %d %s", code, o)
	}
	idle, _, _ := publish() // nothing changed, nobody reading
	addr := freeAddr(t)
	so, _ := background(t, "oai", "serve", "--addr", addr, "--page-size", "10", "--state", state, "--base-url", "http://data.example.org/", dir)
	waitFor(t, "oai serve", 20*time.Second, func() bool { return strings.Contains(so.String(), "serving OAI-PMH") })
	endpoint := "http://" + addr + "/"

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var requests, failed atomic.Int64
	client := &http.Client{Timeout: 10 * time.Second}
	for c := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			deadline := time.Now().Add(15 * time.Second) // bounded whatever happens
			for i := 0; ctx.Err() == nil && time.Now().Before(deadline); i++ {
				q := "verb=ListRecords&metadataPrefix=oai_dc"
				if (c+i)%2 == 1 {
					q = "verb=ListIdentifiers&metadataPrefix=oai_dc"
				}
				req, _ := http.NewRequestWithContext(ctx, "GET", endpoint+"?"+q, nil)
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						failed.Add(1)
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				requests.Add(1)
				if resp.StatusCode != 200 {
					failed.Add(1)
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // the harvesters are at full speed
	os.WriteFile(filepath.Join(dir, "new.txt"), []byte("new"), 0o644)
	var took []time.Duration
	for range 3 {
		d, code, o := publish()
		took = append(took, d)
		if code != 0 {
			t.Errorf("publish beside 16 harvesters: exit %d after %v:\n%s", code, d.Round(time.Millisecond), o)
		}
	}
	// The writer's wait itself: an exclusive open, polled as bbolt does,
	// while the harvesters go on.
	var waits []time.Duration
	for range 5 {
		t0 := time.Now()
		db, err := bolt.OpenSet(state, "default", &bolt.Options{LockTimeout: 3 * time.Second})
		waits = append(waits, time.Since(t0).Round(time.Millisecond))
		if err != nil {
			t.Errorf("exclusive open beside 16 harvesters: %v", err)
			continue
		}
		db.Close()
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	t.Logf("publish took %v beside 16 harvesters, alone %v; an exclusive open waited %v (%d requests, %d failed)", took, idle, waits, requests.Load(), failed.Load())
	for _, w := range waits {
		if w > time.Second {
			t.Errorf("a writer waited %v for the state", w)
		}
	}
	if requests.Load() < 50 {
		t.Errorf("only %d requests answered: the harvesters did not load the server", requests.Load())
	}
}
