package s3

import (
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/locationtest"
	"github.com/resourcesync-go/resourcesync/storage"
	_ "github.com/resourcesync-go/resourcesync/storage/local"
	_ "github.com/resourcesync-go/resourcesync/storage/mem"
)

// TestLocationRoundTrip is the registry's round trip for the storage
// locations, beside the state stores' (internal/testing/locationtest):
// each spelling (a path, file:///path, mem://NAME, s3://BUCKET/PREFIX) is
// opened from its string as a Target, written, closed, opened again from
// the same string as a Target and as a Content, and read back.
func TestLocationRoundTrip(t *testing.T) {
	tb := newTestBucket(t)
	tb.srv.SetEnv(t)
	forms := []locationtest.Form{
		{Name: "path", Loc: filepath.Join(t.TempDir(), "m")},
		{Name: "file-url", Loc: locationtest.FileURL(filepath.Join(t.TempDir(), "m"))},
		{Name: "mem", Loc: "mem://roundtrip-" + t.Name()},
		{Name: "s3", Loc: tb.loc() + "rt"},
	}
	const key, body = "dir/k.txt", "round trip\n"
	write := func(t *testing.T, tg storage.Target) {
		w, err := tg.Create(context.Background(), key, storage.PutOptions{Size: int64(len(body))})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, body); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Commit(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	read := func(t *testing.T, tg storage.Target) {
		ctx := context.Background()
		rc, _, err := tg.Open(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || string(got) != body {
			t.Fatalf("Target read %q, %v; want %q", got, err, body)
		}
		c, err := storage.OpenContent(ctx, tg.Location())
		if err != nil {
			t.Fatalf("OpenContent(%s): %v", tg.Location(), err)
		}
		defer c.Close()
		rc, _, err = c.Open(ctx, key, 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		got, err = io.ReadAll(rc)
		rc.Close()
		if err != nil || string(got) != body {
			t.Fatalf("Content read %q, %v; want %q", got, err, body)
		}
	}
	locationtest.RoundTrip(t, forms, storage.OpenTarget, write, read)
}
