package publish_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

// attackSetup publishes an on-demand Resource Dump of a large file (read
// in chunks) and a small one (read whole) and returns the package entry.
func attackSetup(t *testing.T) (dir string, whole []byte, e rs.Entry, large, small string) {
	t.Helper()
	t0 := time.Date(2026, 3, 1, 10, 10, 0, 0, time.UTC)
	out := t.TempDir()
	dir = t.TempDir()
	ls, base := newLazyServer(t, out)
	st := openStore(t, "")
	large = strings.Repeat("0123456789abcdef", 40000)
	small = "small file"
	apply(t, st, dir, rs.Created, "a/large.bin", large, t0)
	apply(t, st, dir, rs.Created, "b/small.txt", small, t0)
	cfg := publish.Config{BaseURL: base, Out: out, Dumps: true, DumpsOnDemand: true, Now: func() time.Time { return t0.Add(time.Minute) }, Logger: quiet, NoCompanions: true,
		Sets: []publish.Set{{Name: "default", Store: st, Dir: dir, ResourceBase: base + "res/"}}}
	ls.set(t, cfg)
	if _, err := publish.Publish(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	_, es := docEntries(t, base+".resourcesync/default/resourcedump.xml")
	if len(es) != 1 {
		t.Fatalf("%d packages", len(es))
	}
	whole, _ = checkLazyPackage(t, es[0])
	return dir, whole, es[0], large, small
}

// TestAttackDumpSymlinkOut: a file swapped for a link to a file outside
// Dir, even one with the very bytes of the inventory, is not followed.
func TestAttackDumpSymlinkOut(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Windows: creating a symbolic link needs a privilege test accounts lack")
	}
	for _, name := range []string{"a/large.bin", "b/small.txt"} {
		t.Run(name, func(t *testing.T) {
			dir, whole, e, large, small := attackSetup(t)
			content := large
			if strings.HasSuffix(name, "small.txt") {
				content = small
			}
			outside := filepath.Join(t.TempDir(), "secret")
			if err := os.WriteFile(outside, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, filepath.FromSlash(name))
			os.Remove(p)
			if err := os.Symlink(outside, p); err != nil {
				t.Fatal(err)
			}
			_, got, err := get(t, e.Loc)
			if err == nil {
				t.Errorf("download of %d of %d bytes completed through a link out of Dir", len(got), len(whole))
			}
		})
	}
}

// TestAttackDumpMultiRange: a request of several ranges gets the whole
// package (a 200): served as multipart, each range would re-read and
// re-hash a large file from its start, and net/http's writer goroutine
// would go on reading the stream after the handler released it.
func TestAttackDumpMultiRange(t *testing.T) {
	_, whole, e, _, _ := attackSetup(t)
	resp, got, err := get(t, e.Loc, "Range", "bytes=0-9,300000-300009,-5")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || string(got) != string(whole) {
		t.Errorf("multi-range: %d, %d bytes; want 200 and the whole package of %d", resp.StatusCode, len(got), len(whole))
	}
	// A single range still gets a 206.
	resp, got, err = get(t, e.Loc, "Range", "bytes=300000-300009")
	if err != nil || resp.StatusCode != http.StatusPartialContent || string(got) != string(whole[300000:300010]) {
		t.Errorf("single range: %d %v %q", resp.StatusCode, err, got)
	}
}

func readAll(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	var b []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b = append(b, buf[:n]...)
		if err != nil {
			if err.Error() == "EOF" {
				return b, nil
			}
			return b, err
		}
	}
}
