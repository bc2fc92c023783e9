package publish_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/storage"

	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/storage/mem"
)

func TestContentType(t *testing.T) {
	for _, tc := range []struct{ rel, want string }{
		{".well-known/resourcesync", "application/xml"},
		{".resourcesync/capabilitylist.xml", "application/xml"},
		{".resourcesync/default/resourcelist.html", "text/html; charset=utf-8"},
		{".resourcesync/default/resourcedump-0001.zip", "application/zip"},
		{"robots.txt", "text/plain; charset=utf-8"},
		{".resourcesync/robots.txt", "text/plain; charset=utf-8"},
		{"other.bin", "application/octet-stream"},
	} {
		if got := publish.ContentType(tc.rel); got != tc.want {
			t.Errorf("ContentType(%q) = %q, want %q", tc.rel, got, tc.want)
		}
	}
}

// TestUpload: what Upload sends and what it leaves: a file unchanged since
// the last run is not sent again, a rewritten one overwrites its object,
// a removed one's object goes, and an object it did not write (there
// before, or changed by someone else since) is neither overwritten nor
// removed.
func TestUpload(t *testing.T) {
	ctx := context.Background()
	dir, rec := t.TempDir(), filepath.Join(t.TempDir(), "uploaded")
	store := mem.Open(t.Name())
	t.Cleanup(func() { mem.Forget(t.Name()) })
	tg := store.Target("site/")
	write := func(rel, s string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	get := func(key string) string {
		o, _, ok := store.Get("site/" + key)
		if !ok {
			return "<none>"
		}
		return string(o.Data)
	}
	write(".well-known/resourcesync", "sd")
	write(".resourcesync/a.xml", "a1")
	write(".resourcesync/b.html", "b1")
	write(".resourcesync/gone.xml", "g")
	write("robots.txt", "ours")
	write(".resourcesync/.tmp-x", "partial")
	store.Put("site/robots.txt", []byte("theirs"))
	st, err := publish.Upload(ctx, dir, tg, rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st != (publish.UploadStats{Written: 4, NotOurs: 1}) {
		t.Errorf("first run: %+v", st)
	}
	if get("robots.txt") != "theirs" || get(".resourcesync/a.xml") != "a1" || get(".resourcesync/.tmp-x") != "<none>" {
		t.Errorf("first run: robots.txt %q, a.xml %q, .tmp-x %q", get("robots.txt"), get(".resourcesync/a.xml"), get(".resourcesync/.tmp-x"))
	}
	if _, info, _ := store.Get("site/.resourcesync/b.html"); info.ContentType != "text/html; charset=utf-8" {
		t.Errorf("b.html stored as %q", info.ContentType)
	}

	// Second run: a rewritten, b unchanged, gone removed, and the Source
	// Description changed in the bucket by someone else meanwhile.
	write(".resourcesync/a.xml", "a2")
	os.Chtimes(filepath.Join(dir, ".resourcesync", "a.xml"), time.Time{}, time.Now().Add(time.Hour))
	os.Remove(filepath.Join(dir, ".resourcesync", "gone.xml"))
	write(".well-known/resourcesync", "sd2")
	store.Put("site/.well-known/resourcesync", []byte("someone's"))
	st, err = publish.Upload(ctx, dir, tg, rec, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st != (publish.UploadStats{Written: 1, Unchanged: 1, Removed: 1, NotOurs: 2}) {
		t.Errorf("second run: %+v", st)
	}
	if get(".resourcesync/a.xml") != "a2" || get(".resourcesync/gone.xml") != "<none>" || get(".well-known/resourcesync") != "someone's" {
		t.Errorf("second run: a.xml %q, gone.xml %q, the Source Description %q", get(".resourcesync/a.xml"), get(".resourcesync/gone.xml"), get(".well-known/resourcesync"))
	}
}

// orderTarget records the keys committed through a real Target, in order.
type orderTarget struct {
	storage.Target
	keys *[]string
}

func (o orderTarget) Create(ctx context.Context, key string, opt storage.PutOptions) (storage.Writer, error) {
	*o.keys = append(*o.keys, key)
	return o.Target.Create(ctx, key, opt)
}

// TestUploadOrder: documents go in the order Publish wrote them (a part
// before the index naming it, whatever their names), the Source
// Description and robots.txt last.
func TestUploadOrder(t *testing.T) {
	dir := t.TempDir()
	store := mem.Open(t.Name())
	t.Cleanup(func() { mem.Forget(t.Name()) })
	now := time.Now()
	for i, rel := range []string{"robots.txt", ".well-known/resourcesync", ".resourcesync/a-caps.xml", ".resourcesync/b-index.xml", ".resourcesync/z-part.xml"} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(rel), 0o644)
		os.Chtimes(p, time.Time{}, now.Add(-time.Duration(i)*time.Minute))
	}
	var keys []string
	if _, err := publish.Upload(context.Background(), dir, orderTarget{store.Target(""), &keys}, filepath.Join(t.TempDir(), "rec"), nil); err != nil {
		t.Fatal(err)
	}
	// Oldest first: the part, its index, the Capability List; then the
	// Source Description and robots.txt, by name.
	want := []string{".resourcesync/a-caps.xml", ".resourcesync/b-index.xml", ".resourcesync/z-part.xml"}
	slices.Reverse(want)
	want = append(want, ".well-known/resourcesync", "robots.txt")
	if !slices.Equal(keys, want) {
		t.Errorf("uploaded in the order %q, want %q", keys, want)
	}
}

// FuzzUploadRecord: whatever the record file holds (a torn or foreign
// file), Upload either refuses it with an error or reads it, and never
// removes or overwrites an object it did not write: here the bucket
// holds one object of someone else's, and the tree one document.
func FuzzUploadRecord(f *testing.F) {
	f.Add([]byte(`{"k":"theirs.xml","s":5,"m":1,"v":"x"}` + "\n"))
	f.Add([]byte(`{"k":".resourcesync/a.xml","s":1,"m":1,"v":""}` + "\n{"))
	f.Add([]byte("\n\n"))
	f.Add([]byte(`{"k":"theirs.xml","s":5,"m":1,"v":""}` + "\n"))
	f.Fuzz(func(t *testing.T, rec []byte) {
		dir, recPath := t.TempDir(), filepath.Join(t.TempDir(), "rec")
		os.MkdirAll(filepath.Join(dir, ".resourcesync"), 0o755)
		os.WriteFile(filepath.Join(dir, ".resourcesync", "a.xml"), []byte("a"), 0o644)
		os.WriteFile(recPath, rec, 0o644)
		name := "fuzz-upload"
		mem.Forget(name)
		store := mem.Open(name)
		defer mem.Forget(name)
		store.Put("theirs.xml", []byte("their"))
		_, err := publish.Upload(context.Background(), dir, store.Target(""), recPath, nil)
		if o, _, ok := store.Get("theirs.xml"); !ok || string(o.Data) != "their" {
			t.Fatalf("someone else's object removed or overwritten (err %v)", err)
		}
		if o, _, ok := store.Get(".resourcesync/a.xml"); err == nil && (!ok || string(o.Data) != "a") && store.Len() == 2 {
			t.Fatalf("a.xml not uploaded and no error")
		}
	})
}
