package destination

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

func collectStore(t *testing.T, s changeStore) []string {
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

// TestFeedSpool: the newest change per URI, oldest first; of two at the
// same time the first added (the feed's newest) wins; the entry comes
// back whole; nothing is left on disk.
func TestFeedSpool(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, limit := range []int{1, 300, 0} {
		t.Run(fmt.Sprint("limit", limit), func(t *testing.T) {
			dir := t.TempDir()
			s := newFeedSpool(dir)
			s.byURI.Limit, s.byTime.Limit, s.byURI.FanIn, s.byTime.FanIn = limit, limit, 2, 2
			for _, en := range []*rs.Entry{ // newest first, as a feed is read
				change("http://x/d", rs.Updated, at(5)),
				change("http://x/d", rs.Created, at(5)), // same time: the first wins
				change("http://x/a", rs.Updated, at(5)),
				change("http://x/b", rs.Deleted, at(4)),
				change("http://x/c", rs.Created, at(3)),
				change("http://x/c", rs.Updated, at(2)), // older than the one kept
				change("http://x/b", rs.Created, at(2)),
				change("http://x/a", rs.Created, at(1)),
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
			for range 2 { // read twice: the deletions' count, then the run
				if got := collectStore(t, s); strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Fatalf("each:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
			if s.len() != 4 {
				t.Fatalf("len = %d, want 4", s.len())
			}
			var a *rs.Entry
			s.each(func(en *rs.Entry) error {
				if en.Loc == "http://x/a" {
					a = en
				}
				return nil
			})
			if a == nil || a.MD.Hashes.Get(rs.MD5) == "" || !a.MD.HasLength || a.MD.Length != 7 || a.Link(rs.RelDuplicate) != "http://x/a?copy" {
				t.Fatalf("entry not kept whole: %+v", a)
			}
			if err := s.add(change("http://x/e", rs.Created, at(9))); err == nil {
				t.Fatal("an add after the flush was taken")
			}
			s.close()
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("scratch files left: %v", left)
			}
		})
	}
}

// TestFeedSpoolModel: random feeds (times repeating, URIs changing many
// times) give what the bbolt spool gave them when it kept the first of
// equal times.
func TestFeedSpoolModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for round := range 20 {
		s := newFeedSpool(t.TempDir())
		s.byURI.Limit, s.byTime.Limit = 1+rng.IntN(4000), 1+rng.IntN(4000)
		s.byURI.FanIn, s.byTime.FanIn = 2+rng.IntN(3), 2+rng.IntN(3)
		type kept struct {
			at  time.Time
			c   rs.Change
			uri string
		}
		model := map[string]kept{}
		sec := 1000
		for range rng.IntN(400) {
			sec -= rng.IntN(2) // newest first, many alike
			uri := fmt.Sprintf("http://x/%d", rng.IntN(50))
			c := []rs.Change{rs.Created, rs.Updated, rs.Deleted}[rng.IntN(3)]
			at := t0.Add(time.Duration(sec) * time.Second)
			if rng.IntN(10) == 0 {
				at = at.Add(time.Duration(rng.IntN(5)) * time.Second) // out of order
			}
			if k, ok := model[uri]; !ok || at.After(k.at) {
				model[uri] = kept{at, c, uri}
			}
			if err := s.add(change(uri, c, at)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.flush(); err != nil {
			t.Fatal(err)
		}
		var want []string
		ks := make([]kept, 0, len(model))
		for _, k := range model {
			ks = append(ks, k)
		}
		slices.SortFunc(ks, func(a, b kept) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return strings.Compare(a.uri, b.uri)
		})
		for _, k := range ks {
			want = append(want, fmt.Sprintf("%s %s %s", k.uri, k.c, rs.NewTime(k.at)))
		}
		if got := collectStore(t, s); strings.Join(got, "\n") != strings.Join(want, "\n") || s.len() != len(want) {
			t.Fatalf("round %d (len %d):\n%s\nwant:\n%s", round, s.len(), strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		s.close()
	}
}
