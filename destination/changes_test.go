package destination

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

func change(uri string, c rs.Change, at time.Time) *rs.Entry {
	return &rs.Entry{Loc: uri, MD: rs.Metadata{Change: c, DateTime: rs.NewTime(at),
		Hashes: rs.Hashes{{Alg: rs.MD5, Value: "00112233445566778899aabbccddeeff"}}, Length: 7, HasLength: true},
		Links: []rs.Link{{Rel: rs.RelDuplicate, Href: uri + "?copy", Pri: 2}}}
}

func collect(t *testing.T, s *changeSpool) []string {
	t.Helper()
	var got []string
	if err := s.each(func(en *rs.Entry) error {
		got = append(got, fmt.Sprintf("%s %s %s", en.Loc, en.MD.Change, en.MD.DateTime))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestChangeSpool(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, batch := range []int{1, 2, 3, 1000} {
		t.Run(fmt.Sprint("batch", batch), func(t *testing.T) {
			dir := t.TempDir()
			s := newChangeSpool(dir)
			s.batch = batch
			defer s.close()
			for _, en := range []*rs.Entry{
				change("http://x/a", rs.Created, at(1)),
				change("http://x/b", rs.Created, at(2)),
				change("http://x/a", rs.Updated, at(5)),
				change("http://x/c", rs.Created, at(3)),
				change("http://x/b", rs.Deleted, at(4)),
				change("http://x/c", rs.Updated, at(2)), // older than the one kept
				change("http://x/d", rs.Created, at(5)),
				change("http://x/d", rs.Updated, at(5)), // same time: the later wins
			} {
				if err := s.add(en); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.flush(); err != nil {
				t.Fatal(err)
			}
			want := []string{
				"http://x/c created 2026-11-23T10:00:03Z",
				"http://x/b deleted 2026-11-23T10:00:04Z",
				"http://x/a updated 2026-11-23T10:00:05Z",
				"http://x/d updated 2026-11-23T10:00:05Z",
			}
			if got := collect(t, s); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("each:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if s.len() != 4 {
				t.Fatalf("len = %d, want 4", s.len())
			}
			en, err := s.get("http://x/a")
			if err != nil || en == nil || en.MD.Change != rs.Updated || !en.MD.DateTime.Same(rs.NewTime(at(5))) ||
				en.MD.Hashes.Get(rs.MD5) == "" || !en.MD.HasLength || en.MD.Length != 7 || en.Link(rs.RelDuplicate) != "http://x/a?copy" {
				t.Fatalf("get a = %+v, %v", en, err)
			}
			if en, err := s.get("http://x/none"); en != nil || err != nil {
				t.Fatalf("get none = %+v, %v", en, err)
			}
			for _, u := range []string{"http://x/a", "http://x/none", "http://x/c"} {
				if err := s.remove(u); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.flush(); err != nil {
				t.Fatal(err)
			}
			want = []string{want[1], want[3]}
			if got := collect(t, s); strings.Join(got, "\n") != strings.Join(want, "\n") || s.len() != 2 {
				t.Fatalf("after remove (len %d):\n%s", s.len(), strings.Join(got, "\n"))
			}
			s.close()
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("scratch files left: %v", left)
			}
		})
	}
}

func TestChangeSpoolEmpty(t *testing.T) {
	dir := t.TempDir()
	s := newChangeSpool(dir)
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	if got := collect(t, s); len(got) != 0 || s.len() != 0 {
		t.Fatal(got)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("an empty spool created %v", left)
	}
	s.close()
}

// Catching up on many changes must not hold them in memory.
func TestChangeSpoolMemory(t *testing.T) {
	n := 200000
	if testing.Short() { // the race run: fewer changes, same bound
		n = 50000
	}
	s := newChangeSpool(t.TempDir())
	defer s.close()
	heap := func() uint64 {
		// Twice: bbolt keeps page buffers in a sync.Pool, which one GC
		// only moves to its victim cache.
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc // live objects, after the GC
	}
	before := heap()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		uri := fmt.Sprintf("http://example.org/collection/some/longer/path/%08d.xml", i)
		if err := s.add(change(uri, rs.Updated, t0.Add(time.Duration(n-i)*time.Millisecond))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	grown := int64(heap()) - int64(before)
	var count int
	var prev rs.Time
	if err := s.each(func(en *rs.Entry) error {
		if count > 0 && en.MD.DateTime.Before(prev) {
			return fmt.Errorf("%s out of order", en.Loc)
		}
		prev = en.MD.DateTime
		count++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if count != n || s.len() != n {
		t.Fatalf("read back %d, len %d, want %d", count, s.len(), n)
	}
	// The entries alone take more than 300 bytes each in memory.
	if limit := int64(16 << 20); grown > limit {
		t.Fatalf("heap grew by %d MiB over %d changes (limit %d MiB)", grown>>20, n, limit>>20)
	}
	t.Logf("%d changes: heap grew by %.1f MiB", n, float64(grown)/(1<<20))
}
