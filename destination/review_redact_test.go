package destination_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
)

// TestReportRedactedWithCredentials: a run from a Source URL that names
// a password (user:password@, ?token=) succeeds; nothing it hands back
// (the report and its summary, events) holds the secret.
func TestReportRedactedWithCredentials(t *testing.T) {
	const secret = "s3cr3t-pw"
	base := staticSource(t, map[string]string{
		"/capabilitylist.xml": capList,
		"/resourcelist.xml":   resourceList("{base}ok.txt", "{base}missing.txt"),
		"/ok.txt":             "fine",
	})
	for _, src := range []string{
		strings.Replace(base, "://", "://user:"+secret+"@", 1) + "capabilitylist.xml",
		base + "capabilitylist.xml?token=" + secret,
	} {
		var mu sync.Mutex
		var events []string
		opt := syncOpts(t, filepath.Join(t.TempDir(), "dest"))
		opt.Events = func(ev destination.Event) {
			b, _ := json.Marshal(ev)
			mu.Lock()
			events = append(events, string(b))
			mu.Unlock()
		}
		rep, err := destination.Sync(context.Background(), src, opt)
		if err != nil {
			t.Fatal(err)
		}
		sr := one(t, rep)
		b, _ := json.Marshal(rep)
		for _, s := range append([]string{string(b), sr.Summary(false), sr.Summary(true)}, events...) {
			if strings.Contains(s, secret) {
				t.Errorf("%s: leaks the secret: %s", src, s)
			}
		}
	}
}
