package pgstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/memstore"
)

// TestImportLongURLs: the embedded store holds URLs up to the hub's 4 KiB
// limit, PostgreSQL's indexes fewer bytes. Moving such a hub imports
// everything else and counts what was left out, instead of failing the
// whole import with "index row size exceeds".
func TestImportLongURLs(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	src := memstore.Open()
	defer src.Close()
	long := "https://a.example/" + strings.Repeat("x", 3000)
	short := "https://a.example/short"
	for _, topic := range []string{long, short} {
		if _, err := src.Append(ctx, topic, hubstore.Entry{ContentType: "text/plain", Body: []byte("b")}); err != nil {
			t.Fatal(err)
		}
	}
	exp := time.Now().Add(time.Hour)
	for _, topic := range []string{long, short} {
		cb := "https://cb.example/x"
		if err := src.PutSubscription(ctx, hubstore.Subscription{Key: topic + "\x00" + cb, Topic: topic, Callback: cb, Lease: 60, Expires: exp}); err != nil {
			t.Fatal(err)
		}
		if _, err := src.AddJob(ctx, hubstore.Job{Key: topic + "\x00" + cb, Host: "cb.example:443", Mode: "subscribe", Topic: topic, Callback: cb}, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
	s := openT(t, pgtest.Database(t))
	st, err := s.Import(ctx, src)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if st.TooLong != 3 || st.Topics != 1 || st.Entries != 1 || st.Subscriptions != 1 || st.Jobs != 1 {
		t.Errorf("import: %+v; want the short topic, its entry, subscription and job, and 3 left out", st)
	}
	if h, err := s.Head(ctx, short); err != nil || h != 1 {
		t.Errorf("head of the short topic: %d %v", h, err)
	}
}
