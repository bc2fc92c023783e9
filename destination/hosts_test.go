package destination_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/source"
)

// TestOtherNameSuggestsBase: a Source published as http://localhost:PORT/
// and typed as http://127.0.0.1:PORT/ fails with an error that gives the
// --base to use (not only --allow-host), and that --base works (issue 19,
// 5b).
func TestOtherNameSuggestsBase(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "a.txt", []byte("a"))
	ts := startSource(t, dir, nil, func(c *source.Config) {
		c.BaseURL = strings.Replace(c.BaseURL, "127.0.0.1", "localhost", 1)
	})
	local := strings.Replace(ts.base, "127.0.0.1", "localhost", 1)
	_, err := destination.Sync(context.Background(), ts.base, syncOpts(t, t.TempDir()))
	if !errors.Is(err, destination.ErrDiscovery) || !errors.Is(err, fetch.ErrOffOrigin) || !strings.Contains(err.Error(), "--base "+local) {
		t.Fatalf("want a discovery error suggesting --base %s, got %v", local, err)
	}
	t.Logf("error: %v", err)
	dest := t.TempDir()
	opt := syncOpts(t, dest)
	opt.Base = local
	if sr := one(t, mustSync(t, ts.base, opt)); sr.Fetched != 1 || sr.Failed != 0 {
		t.Fatalf("with --base %s: %+v", local, sr)
	}
	sameTree(t, dir, dest)
}
