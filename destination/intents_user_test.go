package destination_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
)

// TestIntentUserFileChild is the process TestIntentAdoptsUserFile kills:
// one worker; after it installed RS_RI_AT it waits for the intent stage
// to commit the next batch, then kills itself. It does nothing unless
// started by that test.
func TestIntentUserFileChild(t *testing.T) {
	src, dest, at := os.Getenv("RS_RI_SOURCE"), os.Getenv("RS_RI_DEST"), os.Getenv("RS_RI_AT")
	if src == "" {
		t.Skip("child process of TestIntentAdoptsUserFile")
	}
	destination.SetTestAfterInstall(func(rel string) {
		if rel == at {
			time.Sleep(300 * time.Millisecond)
			p, _ := os.FindProcess(os.Getpid())
			p.Kill()
			select {}
		}
	})
	opt := syncOpts(t, dest)
	opt.Workers = 1
	destination.Sync(context.Background(), src, opt)
	fmt.Println("finished without the kill")
}

// TestIntentAdoptsUserFile (found by a review of the intents): a run is
// killed after it committed the
// intent for b.txt and before it installed it. The user then puts a file
// of their own at b.txt. The Source gives neither digests, length nor
// lastmod. The next run must not take the user's file for one the killed
// run installed: neither delete it when the Source no longer lists b.txt
// nor keep it as the mirror's b.txt when it does.
func TestIntentAdoptsUserFile(t *testing.T) {
	list := func(md string, locs ...string) string {
		l := resourceList(locs...)
		if md != "" {
			l = strings.ReplaceAll(l, "</loc></url>", "</loc><rs:md "+md+"/></url>")
		}
		return l
	}
	for _, c := range []struct {
		name string
		md   string // the rs:md attributes of every entry
		keep bool
	}{
		{name: "no metadata, deleted at the Source"},
		{name: "no metadata, still listed", keep: true},
		{name: "length only, deleted at the Source", md: `length="14"`},
	} {
		keep := c.keep
		t.Run(c.name, func(t *testing.T) {
			var docs atomic.Pointer[map[string]string]
			var base string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, ok := (*docs.Load())[r.URL.Path]
				if !ok {
					http.NotFound(w, r)
					return
				}
				if strings.HasSuffix(r.URL.Path, ".xml") {
					w.Header().Set("Content-Type", "application/xml")
				}
				fmt.Fprint(w, strings.ReplaceAll(body, "{base}", base))
			}))
			defer srv.Close()
			base = srv.URL + "/"
			v1 := map[string]string{"/capabilitylist.xml": capList, "/resourcelist.xml": list(c.md, "{base}a.txt", "{base}b.txt"),
				"/a.txt": "the Source's a", "/b.txt": "the Source's b"}
			docs.Store(&v1)
			dest := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestIntentUserFileChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), "RS_RI_SOURCE="+base+"capabilitylist.xml", "RS_RI_DEST="+dest, "RS_RI_AT=a.txt")
			out, err := cmd.CombinedOutput()
			if err == nil || strings.Contains(string(out), "finished without the kill") {
				t.Fatalf("the run was not killed (%v):\n%s", err, out)
			}
			if n, err := destination.PendingIntents(dest); err != nil || n != 2 {
				t.Fatalf("%d intents after the kill, want a.txt's and b.txt's (%v)", n, err)
			}
			if _, err := os.Stat(filepath.Join(dest, "b.txt")); err == nil {
				t.Fatal("b.txt installed by the killed run")
			}
			mine := []byte("the user's own b.txt, written after the kill")
			if c.md != "" {
				mine = []byte("user's 14 byte")
			}
			writeFile(t, dest, "b.txt", mine)
			if !keep {
				v2 := map[string]string{"/capabilitylist.xml": capList, "/resourcelist.xml": list(c.md, "{base}a.txt"), "/a.txt": "the Source's a"}
				docs.Store(&v2)
			}
			rep, err := destination.Sync(context.Background(), base+"capabilitylist.xml", syncOpts(t, dest))
			if err != nil {
				t.Fatal(err)
			}
			sr := one(t, rep)
			b, err := os.ReadFile(filepath.Join(dest, "b.txt"))
			if err != nil || !bytes.Equal(b, mine) {
				t.Fatalf("the user's b.txt was removed or overwritten: %q %v\n%s", b, err, sr.Summary(false))
			}
			if keep && rep.OK(false, false) {
				t.Fatalf("the run ended OK with the user's bytes as the mirror's b.txt (not the Source's):\n%s", sr.Summary(false))
			}
			// a.txt, which the killed run did install, is the tool's own
			// (its mtime is the pass's stamp): when the Source drops it,
			// it goes.
			v3 := map[string]string{"/capabilitylist.xml": capList, "/resourcelist.xml": list(c.md)}
			docs.Store(&v3)
			opt := syncOpts(t, dest)
			opt.MaxDelete = destination.NoDeleteLimit
			if _, err := destination.Sync(context.Background(), base+"capabilitylist.xml", opt); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dest, "a.txt")); err == nil {
				t.Error("a.txt, installed by the killed run, was kept when the Source dropped it")
			}
			if b, err := os.ReadFile(filepath.Join(dest, "b.txt")); err != nil || !bytes.Equal(b, mine) {
				t.Errorf("the user's b.txt was removed or overwritten at the end: %q %v", b, err)
			}
		})
	}
}
