// Package storagetest holds the contract suites every storage
// implementation runs: ContentSuite for the Source side (storage.Content)
// and TargetSuite for the mirror side (storage.Target).
package storagetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/resourcesync-go/resourcesync/storage"
)

// Filler changes a Content's objects through the backend's own means (a
// local test writes files, a mem test calls Put, an S3 test uses an S3
// client), so the suite checks what the Content sees of changes made
// behind its back, as a Source sees them.
type Filler interface {
	// Put creates or replaces the object under key with data.
	Put(t *testing.T, key string, data []byte)
	// Delete removes the object under key.
	Delete(t *testing.T, key string)
}

// ContentSuite runs the contract of storage.Content. open returns a new,
// empty Content and its Filler, once per subtest.
func ContentSuite(t *testing.T, open func(t *testing.T) (storage.Content, Filler)) {
	ctx := context.Background()
	t.Run("Order", func(t *testing.T) {
		c, f := open(t)
		// Byte order of the keys: a directory's entries do not sort as
		// names ("a/b" sorts between "a.txt" and "a0").
		keys := []string{"a0", "a/b", "a.txt", "a-b", "a/b.c/d", "a/bc", "b c/d e.txt", "ü.txt", "日本/語.txt", "Z", "z", "a+", "~"}
		for _, k := range keys {
			f.Put(t, k, []byte("data of "+k))
		}
		want := slices.Clone(keys)
		slices.Sort(want)
		got := list(t, c, "")
		if !slices.Equal(keysOf(got), want) {
			t.Fatalf("List order:\n got %q\nwant %q", keysOf(got), want)
		}
		for _, inf := range got {
			if inf.Size != int64(len("data of "+inf.Key)) || inf.Version == "" || inf.ModTime.IsZero() {
				t.Errorf("List %q: %+v", inf.Key, inf)
			}
		}
		// after: a key, a prefix of keys, and keys that are not there.
		for _, after := range append(slices.Clone(want), "a", "a/", "a/b/", "b", "\x00", "\xff") {
			var exp []string
			for _, k := range want {
				if k > after {
					exp = append(exp, k)
				}
			}
			if g := keysOf(list(t, c, after)); !slices.Equal(g, exp) {
				t.Errorf("List after %q:\n got %q\nwant %q", after, g, exp)
			}
		}
	})
	t.Run("Paging", func(t *testing.T) {
		if testing.Short() {
			t.Skip("2,500 objects")
		}
		c, f := open(t)
		const n = 2500 // crosses S3's pages of 1,000
		var want []string
		for i := range n {
			k := fmt.Sprintf("p/%05d", i)
			f.Put(t, k, []byte{byte(i)})
			want = append(want, k)
		}
		if g := keysOf(list(t, c, "")); !slices.Equal(g, want) {
			t.Fatalf("List: %d keys, want %d (first %q)", len(g), n, g[:min(3, len(g))])
		}
		if g := keysOf(list(t, c, want[1499])); !slices.Equal(g, want[1500:]) {
			t.Fatalf("List after %s: %d keys, want %d", want[1499], len(g), n-1500)
		}
		// fn's error stops the listing and is returned.
		stop := errors.New("stop")
		seen := 0
		err := c.List(ctx, "", func(storage.Info) error {
			if seen++; seen == 1200 {
				return stop
			}
			return nil
		})
		if !errors.Is(err, stop) || seen != 1200 {
			t.Fatalf("List stopped by fn: err %v after %d calls", err, seen)
		}
	})
	t.Run("Missing", func(t *testing.T) {
		c, f := open(t)
		f.Put(t, "d/x", []byte("x"))
		for _, k := range []string{"nope", "d", "d/x/y", "d/y"} {
			if _, err := c.Stat(ctx, k); !errors.Is(err, storage.ErrNotExist) {
				t.Errorf("Stat %q: %v, want ErrNotExist", k, err)
			}
			if rc, _, err := c.Open(ctx, k, 0, -1); !errors.Is(err, storage.ErrNotExist) {
				if rc != nil {
					rc.Close()
				}
				t.Errorf("Open %q: %v, want ErrNotExist", k, err)
			}
		}
		if _, err := c.Stat(ctx, "../x"); err == nil {
			t.Errorf("Stat ../x: no error")
		}
	})
	t.Run("Ranges", func(t *testing.T) {
		c, f := open(t)
		f.Put(t, "r", []byte("0123456789"))
		for _, tc := range []struct {
			off, n int64
			want   string
		}{{0, -1, "0123456789"}, {3, 4, "3456"}, {8, 10, "89"}, {10, -1, ""}, {0, 0, ""}, {9, 1, "9"}} {
			rc, inf, err := c.Open(ctx, "r", tc.off, tc.n)
			if err != nil {
				t.Fatalf("Open(%d, %d): %v", tc.off, tc.n, err)
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil || string(b) != tc.want || inf.Size != 10 || inf.Key != "r" {
				t.Errorf("Open(%d, %d) = %q, %v, %+v; want %q", tc.off, tc.n, b, err, inf, tc.want)
			}
		}
	})
	t.Run("Version", func(t *testing.T) {
		c, f := open(t)
		f.Put(t, "v", []byte("one"))
		a := stat(t, c, "v")
		if b := stat(t, c, "v"); b.Version != a.Version || b.Size != a.Size {
			t.Fatalf("Version of an untouched object changed: %q then %q", a.Version, b.Version)
		}
		if l := list(t, c, ""); len(l) != 1 || l[0].Version != a.Version {
			t.Fatalf("List's Version %+v, Stat's %q", l, a.Version)
		}
		f.Put(t, "v", []byte("two"))
		b := stat(t, c, "v")
		if b.Version == a.Version {
			t.Fatalf("Version kept (%q) when the bytes changed", a.Version)
		}
		rc, inf, err := c.Open(ctx, "v", 0, -1)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(data, []byte("two")) || inf.Version != b.Version {
			t.Fatalf("Open after the change: %q, %v, version %q (Stat's %q)", data, err, inf.Version, b.Version)
		}
	})
	t.Run("Removed", func(t *testing.T) {
		c, f := open(t)
		for _, k := range []string{"a", "b/c", "d"} {
			f.Put(t, k, []byte(k))
		}
		f.Delete(t, "b/c")
		if g := keysOf(list(t, c, "")); !slices.Equal(g, []string{"a", "d"}) {
			t.Fatalf("List after a removal: %q", g)
		}
		if _, err := c.Stat(ctx, "b/c"); !errors.Is(err, storage.ErrNotExist) {
			t.Fatalf("Stat of a removed object: %v", err)
		}
		f.Delete(t, "a")
		f.Delete(t, "d")
		if g := list(t, c, ""); len(g) != 0 {
			t.Fatalf("List of an emptied Content: %q", keysOf(g))
		}
	})
	t.Run("Empty", func(t *testing.T) {
		c, _ := open(t)
		if g := list(t, c, ""); len(g) != 0 {
			t.Fatalf("List of a new Content: %q", keysOf(g))
		}
		if c.Location() == "" {
			t.Errorf("Location is empty")
		}
	})
}

func list(t *testing.T, c storage.Content, after string) []storage.Info {
	t.Helper()
	var out []storage.Info
	if err := c.List(context.Background(), after, func(inf storage.Info) error {
		out = append(out, inf)
		return nil
	}); err != nil {
		t.Fatalf("List after %q: %v", after, err)
	}
	return out
}

func keysOf(l []storage.Info) []string {
	out := make([]string, 0, len(l))
	for _, inf := range l {
		out = append(out, inf.Key)
	}
	return out
}

func stat(t *testing.T, c storage.Content, key string) storage.Info {
	t.Helper()
	inf, err := c.Stat(context.Background(), key)
	if err != nil {
		t.Fatalf("Stat %q: %v", key, err)
	}
	if inf.Key != key {
		t.Fatalf("Stat %q: Key %q", key, inf.Key)
	}
	return inf
}
