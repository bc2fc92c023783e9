package boltstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/boltstore"
)

// testdata/hub-v1.db was written by the hub before hubstore existed
// (websub/hub/store.go at 90cebb7): topic changes.xml with entries 3..5
// (1 and 2 pruned), other.xml with 1, two subscriptions (one failing),
// one pending verification and one dead letter.
func TestOpensStateOfEarlierHub(t *testing.T) {
	ctx := context.Background()
	b, err := os.ReadFile("testdata/hub-v1.db")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hub.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const changes = "https://src.example/changes.xml"
	heads, err := s.Heads(ctx)
	if err != nil || heads[changes] != 5 || heads["https://src.example/other.xml"] != 1 {
		t.Fatalf("heads %v %v", heads, err)
	}
	es, err := s.Entries(ctx, changes, 0, 10)
	if err != nil || len(es) != 3 || es[0].Seq != 3 || string(es[0].Body) != "<n2/>" {
		t.Fatalf("entries %+v %v", es, err)
	}
	pub := time.Date(2025, 6, 1, 8, 0, 2, 123456789, time.UTC)
	if e := es[0]; !e.Published.Equal(pub) || e.Published.Location() != time.UTC || e.ContentType != "application/xml" ||
		e.HubURL != "https://hub.example/hub" || len(e.Links) != 1 {
		t.Fatalf("entry %+v", e)
	}
	var subs []hubstore.Subscription
	for r, err := range s.Subscriptions(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		subs = append(subs, r)
	}
	if len(subs) != 2 {
		t.Fatalf("%d subscriptions", len(subs))
	}
	a, f := subs[0], subs[1]
	if a.Callback != "https://a.example/cb" || a.Secret != "sa" || a.Cursor != 3 || a.Lease != 864000 ||
		!a.Expires.Equal(time.Date(2035, 1, 2, 2, 4, 5, 0, time.UTC)) {
		t.Fatalf("subscription a: %+v", a)
	}
	if f.Cursor != 4 || f.Attempt != 2 || f.LastError != "callback answered 503" || !f.FirstFail.Equal(time.Date(2025, 6, 1, 8, 0, 0, 123456789, time.UTC)) {
		t.Fatalf("failing subscription: %+v", f)
	}
	if n, _ := s.CountSubscriptions(ctx, changes); n != 2 {
		t.Fatalf("count %d", n)
	}
	var jobs []hubstore.Job
	for j, err := range s.Jobs(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
	}
	if len(jobs) != 1 || jobs[0].Host != "c.example:80" || jobs[0].VerifyToken != "vt" || !jobs[0].HasToken || jobs[0].Attempts != 1 {
		t.Fatalf("jobs %+v", jobs)
	}
	// The per-host limit counts the old job by its derived host.
	if _, err := s.AddJob(ctx, hubstore.Job{Key: "k", Host: "c.example:80"}, 0, 1); err == nil {
		t.Fatal("per-host limit ignores the job of the earlier hub")
	}
	d, err := s.GetDeadLetter(ctx, 1)
	if err != nil || d.Seq != 4 || string(d.Body) != "<n3/>" || d.Attempts != 12 {
		t.Fatalf("dead letter %+v %v", d, err)
	}
	// And it goes on: the next seq follows the old head, the old
	// subscription is claimed and its cursor moves.
	if seq, err := s.Append(ctx, changes, hubstore.Entry{ContentType: "text/plain"}); err != nil || seq != 6 {
		t.Fatalf("append %d %v", seq, err)
	}
	c, err := s.Claim(ctx, "n", time.Minute, 10)
	if err != nil || len(c.Held) != 2 {
		t.Fatalf("claim %+v %v", c, err)
	}
	if r, err := s.UpdateCursors(ctx, "n", []hubstore.CursorUpdate{{Key: a.Key, Cursor: 6}}); err != nil || len(r) != 0 {
		t.Fatalf("update %v %v", r, err)
	}
}

func TestLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	s, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if testing.Short() {
		return // the second open waits for bbolt's 2 s timeout
	}
	if _, err := boltstore.Open(path, nil); !errors.Is(err, hubstore.ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
}

func TestNotAStateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hub.db")
	os.WriteFile(path, []byte("this is not a bbolt file, but long enough to look at its header........"), 0o600)
	if _, err := boltstore.Open(path, nil); err == nil {
		t.Fatal("opened garbage")
	}
}
