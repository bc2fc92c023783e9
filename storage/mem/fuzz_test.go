package mem_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/storage"
	"github.com/resourcesync-go/resourcesync/storage/mem"
)

// FuzzList: whatever keys are put, List yields the valid ones in byte
// order, each once, and List after any string yields exactly those after
// it; a location is parsed or refused, never a panic.
func FuzzList(f *testing.F) {
	f.Add("a.txt\na/b\na0\nü\n日本/語", "a/")
	f.Add("x\nx/y\nx/y/z", "x")
	f.Fuzz(func(t *testing.T, keys, after string) {
		mem.Forget("fuzz")
		s := mem.Open("fuzz")
		var want []string
		for _, k := range strings.Split(keys, "\n") {
			if _, err := s.Put(k, []byte(k)); err == nil {
				if !slices.Contains(want, k) {
					want = append(want, k)
				}
			} else if storage.ValidKey(k) {
				t.Fatalf("Put %q: %v", k, err)
			}
		}
		slices.Sort(want)
		c := s.Content("")
		var got []string
		if err := c.List(context.Background(), after, func(inf storage.Info) error {
			got = append(got, inf.Key)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var exp []string
		for _, k := range want {
			if k > after {
				exp = append(exp, k)
			}
		}
		if !slices.Equal(got, exp) {
			t.Fatalf("List after %q: %q, want %q", after, got, exp)
		}
		if c, err := storage.OpenContent(context.Background(), "mem://fuzz/"+after); err == nil {
			c.List(context.Background(), "", func(storage.Info) error { return nil })
		}
	})
}
