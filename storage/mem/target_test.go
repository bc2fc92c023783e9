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

var targetN atomic.Int64

func TestTargetSuite(t *testing.T) {
	storagetest.TargetSuite(t, func(t *testing.T) storage.Target {
		name := fmt.Sprintf("target-suite-%d", targetN.Add(1))
		t.Cleanup(func() { mem.Forget(name) })
		tg, err := storage.OpenTarget(context.Background(), "mem://"+name)
		if err != nil {
			t.Fatal(err)
		}
		return tg
	})
}

// TestTargetSuitePrefix runs the suite on a prefix of a Store that holds
// other objects besides: none of them is seen or touched.
func TestTargetSuitePrefix(t *testing.T) {
	storagetest.TargetSuite(t, func(t *testing.T) storage.Target {
		name := fmt.Sprintf("target-suite-%d", targetN.Add(1))
		t.Cleanup(func() { mem.Forget(name) })
		s := mem.Open(name)
		for _, k := range []string{"a", "pre", "pre-x", "pre0/x", "zz"} {
			s.Put(k, []byte("outside"))
		}
		tg, err := storage.OpenTarget(context.Background(), "mem://"+name+"/pre")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if n := s.Len(); n < 5 {
				t.Errorf("objects outside the prefix removed: %d left", n)
			}
		})
		return tg
	})
}
