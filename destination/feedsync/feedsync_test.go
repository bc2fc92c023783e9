package feedsync

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

// pages is a stream held as documents by URL, for the walk's logic; the
// walk over HTTP through the mirror's Getter is tested in package
// destination (TestFeedSync, TestFeedHostile).
type pages map[string]string

func (p pages) get(_ context.Context, u string) (Fetched, error) {
	d, ok := p[u]
	if !ok {
		return Fetched{}, fmt.Errorf("GET %s: 404", u)
	}
	return Fetched{ReadCloser: io.NopCloser(strings.NewReader(d)), URL: u}, nil
}

const coll = `{"type":"OrderedCollection","id":"https://e.org/c","last":{"id":"https://e.org/p1"}}`

func page(id, prev, items string) string {
	p := ""
	if prev != "" {
		p = `"prev":{"id":"` + prev + `"},`
	}
	return `{"type":"OrderedCollectionPage","id":"` + id + `",` + p + `"partOf":{"id":"https://e.org/c"},"orderedItems":[` + items + `]}`
}

func act(typ, obj string, at int, extra string) string {
	o := ""
	if obj != "" {
		o = `"object":{"id":"` + obj + `"},`
	}
	tm := "endTime"
	if typ == "Refresh" {
		tm = "startTime"
	}
	return `{"type":"` + typ + `",` + o + extra + `"` + tm + `":"` + time.Unix(int64(1e9+at), 0).UTC().Format(time.RFC3339) + `"}`
}

func TestWalk(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(1e9+s), 0).UTC() }
	for _, tc := range []struct {
		name  string
		p0    string // items of the first page
		p1    string // items of the last page
		since int    // 0: first run
		want  string // changes given, newest first: "c:a u:b d:x"
		err   string
	}{
		{name: "first run", p0: act("Create", "a", 1, "") + "," + act("Create", "b", 2, ""), p1: act("Update", "a", 3, ""),
			want: "updated:a created:b created:a"},
		{name: "since stops", p0: act("Create", "a", 1, ""), p1: act("Update", "a", 3, "") + "," + act("Delete", "b", 4, ""), since: 3,
			want: "deleted:b updated:a"}, // the one dated since is read again
		{name: "move", p1: act("Move", "a", 5, `"target":{"id":"b","size":3,"digest":"md5:d41d8cd98f00b204e9800998ecf8427e"},`),
			want: "deleted:a created:b"},
		{name: "refresh first run stops", p0: act("Create", "old", 1, ""), p1: act("Refresh", "", 2, "") + "," + act("Update", "a", 3, ""),
			want: "updated:a"},
		{name: "refresh later takes deletions only", p0: act("Create", "old", 2, "") + "," + act("Delete", "gone", 3, ""), p1: act("Refresh", "", 4, "") + "," + act("Update", "a", 5, ""), since: 1,
			want: "updated:a deleted:gone"},
		{name: "add and remove of this stream only", p1: act("Add", "a", 1, `"target":{"id":"https://e.org/c"},`) + "," + act("Add", "x", 2, `"target":{"id":"https://other/c"},`) + "," + act("Remove", "b", 3, `"origin":{"id":"https://e.org/c"},`) + "," + act("Remove", "y", 4, `"origin":{"id":"https://other/c"},`),
			want: "deleted:b created:a"},
		{name: "unknown types ignored", p1: act("Like", "a", 1, "") + "," + act("Update", "b", 2, ""), want: "updated:b"},
		{name: "no object", p1: act("Update", "", 1, ""), err: "names no object"},
		{name: "level 0", p1: `{"type":"Update","object":{"id":"a"}}`, since: 9, want: "updated:a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := pages{"https://e.org/c": coll, "https://e.org/p0": page("https://e.org/p0", "", tc.p0), "https://e.org/p1": page("https://e.org/p1", "https://e.org/p0", tc.p1)}
			var since time.Time
			if tc.since > 0 {
				since = at(tc.since)
			}
			var got []string
			_, err := Walk(context.Background(), ps.get, "https://e.org/c", Options{Since: since}, func(c Change) error {
				got = append(got, string(c.Change)+":"+strings.TrimPrefix(c.URI, "https://e.org/"))
				if tc.name == "move" && c.Change == rs.Created && (c.Length != 3 || c.Hashes.Get(rs.MD5) == "") {
					t.Errorf("Move's target lost its size or digest: %+v", c)
				}
				return nil
			})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("got  %s\nwant %s", g, tc.want)
			}
		})
	}
}

func TestWalkBounds(t *testing.T) {
	loop := pages{"https://e.org/c": coll,
		"https://e.org/p1": page("https://e.org/p1", "https://e.org/p0", act("Create", "a", 1, "")),
		"https://e.org/p0": page("https://e.org/p0", "https://e.org/p1", act("Create", "b", 0, ""))}
	if _, err := Walk(context.Background(), loop.get, "https://e.org/c", Options{}, func(Change) error { return nil }); !errors.Is(err, ErrLoop) {
		t.Errorf("loop: %v", err)
	}
	// An endless chain of pages, each naming a new prev.
	endless := func(_ context.Context, u string) (Fetched, error) {
		if u == "https://e.org/c" {
			return Fetched{ReadCloser: io.NopCloser(strings.NewReader(coll)), URL: u}, nil
		}
		return Fetched{ReadCloser: io.NopCloser(strings.NewReader(page(u, u+"x", act("Create", "a", 1, "")))), URL: u}, nil
	}
	if _, err := Walk(context.Background(), endless, "https://e.org/c", Options{MaxPages: 50}, func(Change) error { return nil }); !errors.Is(err, ErrTooManyPages) {
		t.Errorf("endless: %v", err)
	}
	// A future date is clamped: the position is the clock, not the date.
	now := time.Unix(2e9, 0)
	fut := pages{"https://e.org/c": coll, "https://e.org/p1": page("https://e.org/p1", "", `{"type":"Create","object":{"id":"a"},"endTime":"2100-01-01T00:00:00Z"}`)}
	var warned string
	res, err := Walk(context.Background(), fut.get, "https://e.org/c", Options{Now: func() time.Time { return now }, Warn: func(m string) { warned = m }}, func(c Change) error {
		if !c.Time.Equal(now) {
			t.Errorf("change at %v, want now", c.Time)
		}
		return nil
	})
	if err != nil || !res.Until.Equal(now) || res.Clamped != 1 || !strings.Contains(warned, "future") {
		t.Errorf("future: until %v clamped %d warned %q err %v", res.Until, res.Clamped, warned, err)
	}
}
