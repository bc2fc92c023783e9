package dump_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"path"
	"strings"
	"sync"
	"testing"

	"github.com/resourcesync-go/resourcesync/destination/dump"
	"github.com/resourcesync-go/resourcesync/rs"
)

// EachParallel delivers every entry once, with its bytes, each on the
// goroutine shard names, in manifest order within a goroutine.
func TestEachParallel(t *testing.T) {
	var items []string
	ms := []zm{{}}
	want := map[string][]byte{}
	var order []string
	for i := range 200 {
		name := fmt.Sprintf("d%02d/f%03d", i%10, i)
		data := bytes.Repeat([]byte(name), 1+i%7)
		loc := "http://example.com/" + name
		items = append(items, item(loc, "/"+name, data))
		ms = append(ms, zm{name: name, data: data, deflate: i%2 == 0})
		want[loc] = data
		order = append(order, loc)
	}
	items = append(items, change("http://example.com/gone", "deleted", "", nil))
	ms[0] = manifest(rdm(items...))
	p, err := dump.Open(writeFile(t, mkzip(t, ms...)), dump.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, n := range []int{1, 2, 3} {
		shard := func(e *rs.Entry) int {
			h := fnv.New32a()
			h.Write([]byte(path.Dir(e.Loc)))
			return int(h.Sum32() % uint32(n))
		}
		var mu sync.Mutex
		got := make([][]string, n)
		deletions := 0
		err := p.EachParallel(context.Background(), n, shard, func(w int, e rs.Entry, r io.Reader) error {
			if w != shard(&e) {
				t.Errorf("n=%d: %s on goroutine %d, want %d", n, e.Loc, w, shard(&e))
			}
			if r == nil {
				mu.Lock()
				deletions++
				mu.Unlock()
				return nil
			}
			b, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			if !bytes.Equal(b, want[e.Loc]) {
				t.Errorf("n=%d: %s: %q", n, e.Loc, b)
			}
			got[w] = append(got[w], e.Loc) // one goroutine per w: no lock
			return nil
		})
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if deletions != 1 {
			t.Errorf("n=%d: %d deletions delivered, want 1", n, deletions)
		}
		seen := map[string]bool{}
		for w, locs := range got {
			if n > 1 && len(locs) == 0 {
				t.Errorf("n=%d: goroutine %d got nothing", n, w)
			}
			last := -1
			for _, l := range locs {
				i := indexOf(order, l)
				if i <= last {
					t.Errorf("n=%d: goroutine %d: %s out of manifest order", n, w, l)
				}
				last = i
				if seen[l] {
					t.Errorf("n=%d: %s delivered twice", n, l)
				}
				seen[l] = true
			}
		}
		if len(seen) != len(want) {
			t.Errorf("n=%d: %d entries delivered, want %d", n, len(seen), len(want))
		}
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// The goroutines of EachParallel share one budget: together they deliver
// at most what Each would (the declared total and the slack, and one read
// more per goroutine), then fail with ErrTooLarge.
func TestEachParallelDeliversAtMostDeclared(t *testing.T) {
	zeros := make([]byte, 1<<20)
	kernel := deflate(zeros)
	var items []string
	ms := []zm{{}}
	for i := range 20 {
		name := fmt.Sprintf("z%d/%02d", i%2, i)
		items = append(items, fmt.Sprintf(`<url><loc>http://example.com/%d</loc><rs:md path="/%s" length="1000"/></url>`, i, name))
		ms = append(ms, zerosMember(t, name, kernel))
	}
	ms[0] = manifest(rdm(items...))
	p, err := dump.Open(writeFile(t, mkzip(t, ms...)), dump.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var mu sync.Mutex
	var total int64
	err = p.EachParallel(context.Background(), 2, func(e *rs.Entry) int { return strings.Count(e.Loc, "1") % 2 },
		func(_ int, _ rs.Entry, r io.Reader) error {
			n, err := io.Copy(io.Discard, r)
			mu.Lock()
			total += n
			mu.Unlock()
			return err
		})
	if !errors.Is(err, dump.ErrTooLarge) {
		t.Fatalf("err = %v", err)
	}
	if limit := p.Declared() + 64<<10 + p.Declared()/100 + 20 + 2*32<<10; total > limit {
		t.Fatalf("delivered %d bytes, declared %d", total, p.Declared())
	}
}

// The first error stops every goroutine and is what EachParallel returns.
func TestEachParallelStops(t *testing.T) {
	var items []string
	ms := []zm{{}}
	for i := range 100 {
		name := fmt.Sprintf("d%d/f%03d", i%2, i)
		items = append(items, item("http://example.com/"+name, "/"+name, []byte(name)))
		ms = append(ms, zm{name: name, data: []byte(name)})
	}
	ms[0] = manifest(rdm(items...))
	p, err := dump.Open(writeFile(t, mkzip(t, ms...)), dump.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	stop := errors.New("stop")
	var mu sync.Mutex
	calls := 0
	err = p.EachParallel(context.Background(), 2, func(e *rs.Entry) int { return int(e.Loc[len("http://example.com/d")] - '0') },
		func(w int, e rs.Entry, r io.Reader) error {
			mu.Lock()
			calls++
			mu.Unlock()
			if w == 1 {
				return stop
			}
			return nil
		})
	if !errors.Is(err, stop) {
		t.Fatalf("err = %v, want fn's", err)
	}
	if calls >= 100 {
		t.Errorf("%d calls: the error stopped nothing", calls)
	}
}
