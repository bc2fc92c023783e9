package destination_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
)

// TestErrorsRedacted: what the package hands a Go user (the error of
// Sync, the report's failures and source, every event) carries no
// credential that a Source URL or a Source's document held
// (user:password@, ?token=), so logging it leaks nothing; errors.Is
// still sees the sentinel errors.
func TestErrorsRedacted(t *testing.T) {
	const secret = "s3cr3t-pw"
	base := staticSource(t, map[string]string{
		"/capabilitylist.xml": capList,
		"/resourcelist.xml": resourceList("{base}ok.txt",
			strings.Replace("{base}a.txt", "://", "://user:"+secret+"@", 1),
			"{base}b.txt?token="+secret),
		"/ok.txt": "fine",
	})
	withUser := strings.Replace(base, "://", "://user:"+secret+"@", 1)
	for _, c := range []struct {
		name, source string
		wantErr      error // nil: the run goes, with failures
	}{
		{"source not found", withUser + "nothing.xml", destination.ErrDiscovery},
		{"source with a token not found", base + "nothing.xml?token=" + secret, destination.ErrDiscovery},
		{"documents naming credentials", base + "capabilitylist.xml", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var events []string
			opt := syncOpts(t, filepath.Join(t.TempDir(), "dest"))
			opt.Events = func(ev destination.Event) {
				b, _ := json.Marshal(ev)
				mu.Lock()
				events = append(events, string(b))
				mu.Unlock()
			}
			rep, err := destination.Sync(context.Background(), c.source, opt)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err %v, want %v", err, c.wantErr)
				}
				for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err.Error())} {
					if strings.Contains(s, secret) {
						t.Errorf("error leaks the secret: %s", s)
					}
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if sr := one(t, rep); sr.Fetched != 1 || sr.Failed != 2 {
					t.Fatalf("%+v", sr)
				}
				b, _ := json.Marshal(rep)
				if strings.Contains(string(b), secret) {
					t.Errorf("report leaks the secret: %s", b)
				}
				if !strings.Contains(string(b), "REDACTED") {
					t.Errorf("report names no failure's URI: %s", b)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, e := range events {
				if strings.Contains(e, secret) {
					t.Errorf("event leaks the secret: %s", e)
				}
			}
		})
	}
}
