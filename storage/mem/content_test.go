package mem_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/resourcesync-go/resourcesync/storage"
	"github.com/resourcesync-go/resourcesync/storage/mem"
	"github.com/resourcesync-go/resourcesync/storage/storagetest"
)

type filler struct {
	s      *mem.Store
	prefix string
}

func (f filler) Put(t *testing.T, key string, data []byte) {
	t.Helper()
	if _, err := f.s.Put(f.prefix+key, data); err != nil {
		t.Fatal(err)
	}
}

func (f filler) Delete(t *testing.T, key string) {
	t.Helper()
	if !f.s.Delete(f.prefix + key) {
		t.Fatalf("Delete %q: nothing there", key)
	}
}

var n atomic.Int64

func TestContentSuite(t *testing.T) {
	for _, prefix := range []string{"", "some/prefix/"} {
		t.Run(fmt.Sprintf("prefix=%q", prefix), func(t *testing.T) {
			storagetest.ContentSuite(t, func(t *testing.T) (storage.Content, storagetest.Filler) {
				name := fmt.Sprintf("suite%d", n.Add(1))
				t.Cleanup(func() { mem.Forget(name) })
				s := mem.Open(name)
				// Objects beside the prefix must not show through it.
				if prefix != "" {
					s.Put("some/prefiw", []byte("beside"))
					s.Put("some/prefix", []byte("beside"))
					s.Put("some/prefix0/x", []byte("beside"))
				}
				c, err := storage.OpenContent(context.Background(), "mem://"+name+"/"+prefix)
				if err != nil {
					t.Fatal(err)
				}
				return c, filler{s, prefix}
			})
		})
	}
}

// The same name opens the same Store.
func TestShared(t *testing.T) {
	t.Cleanup(func() { mem.Forget("shared") })
	mem.Open("shared").Put("k", []byte("v"))
	c, err := storage.OpenContent(context.Background(), "mem://shared")
	if err != nil {
		t.Fatal(err)
	}
	inf, err := c.Stat(context.Background(), "k")
	if err != nil || inf.Size != 1 {
		t.Fatalf("Stat: %+v, %v", inf, err)
	}
}
