package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestErrorsRedacted: what Sync returns and reports (its error, a
// collection's Err and Cause, a failed fragment's, the events' Err)
// carries no credential of a URL (a userinfo password, a token in a
// query), so that a program logging them leaks nothing; errors.Is still
// sees through. Before, "GET http://user:secret@…" was in them.
func TestErrorsRedacted(t *testing.T) {
	const secret = "s3cr3t-pw"
	fs := collectionServer(t, "2020-06-01T00:00:00Z", "")
	// The snapshot and a fragment are linked with a token in the query,
	// and fail (404).
	fs.feed("/snapshots", feedDoc("", entryDoc("new", "2020-06-01T00:00:00Z", nil, "http://www.sdshare.org/2012/core/snapshot", nt, "/snap?token="+secret)))
	fs.handle("/snap", http.NotFound)
	fs.feed("/fragments", feedDoc("", entryDoc("a", "2020-06-02T00:00:00Z", []string{"http://x/a"}, relFragment, nt, "/frag/a?token="+secret)))
	fs.handle("/gone", http.NotFound)
	fs.handle("/bad", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/atom+xml")
		fmt.Fprint(w, "<feed")
	})
	host := strings.TrimPrefix(fs.URL(), "http://")
	base := "http://user:" + secret + "@" + host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://user:" + secret + "@" + ln.Addr().String() + "/"
	ln.Close()

	clean := func(t *testing.T, what string, s string) {
		t.Helper()
		if strings.Contains(s, secret) {
			t.Errorf("%s holds the secret: %s", what, s)
		}
	}
	for _, tc := range []struct {
		name, overview string
		is             error // of Sync's error; nil: Sync succeeds, the report fails
	}{
		{"connection refused", closed, ErrDiscovery},
		{"overview 404", base + "/gone", ErrDiscovery},
		{"overview not XML", base + "/bad", ErrDiscovery},
		{"snapshot and fragment 404", base + "/", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			cfg := e.config(tc.overview)
			cfg.Retry.Retries = -1
			var events []Event
			cfg.Events = func(ev Event) { events = append(events, ev) }
			rep, err := Sync(context.Background(), cfg)
			if tc.is != nil {
				if !errors.Is(err, tc.is) {
					t.Fatalf("Sync: %v, want %v", err, tc.is)
				}
				clean(t, "Sync's error", err.Error())
				clean(t, "Sync's error (%+v)", fmt.Sprintf("%+v", err))
			} else if err != nil {
				t.Fatal(err)
			}
			failed := 0
			for _, cr := range rep.Collections {
				clean(t, "a collection's Err", cr.Err)
				if cr.Cause != nil {
					failed++
					clean(t, "a collection's Cause", fmt.Sprintf("%+v", cr.Cause))
				}
				for _, f := range cr.Failures {
					failed++
					clean(t, "a failure's Err", f.Err)
					clean(t, "a failure's Cause", fmt.Sprintf("%+v", f.Cause))
				}
			}
			if tc.is == nil && failed == 0 {
				t.Errorf("nothing failed: %+v", rep)
			}
			for _, ev := range events {
				clean(t, "an event's Err", ev.Err)
			}
		})
	}
}
