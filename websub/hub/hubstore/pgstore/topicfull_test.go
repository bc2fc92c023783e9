package pgstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// TestSubscribeTopicFull: Subscribe beyond maxPerTopic returns ErrTopicFull
// and still deletes the job, whether the job exists or not. Found by the
// model test (HUBSTORETEST_SEED=5420684615403061878): with no job to
// delete, the UPDATE's ErrNoRows escaped and rolled the transaction back.
func TestSubscribeTopicFull(t *testing.T) {
	pgtest.Skip(t)
	ctx := context.Background()
	s := openT(t, pgtest.Database(t))
	sub := func(key string) hubstore.Subscription {
		return hubstore.Subscription{Key: key, Topic: "https://a.example/", Callback: "https://cb.example/" + key, Lease: 60,
			Expires: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	}
	if _, err := s.Subscribe(ctx, 0, sub("k1"), 1); err != nil {
		t.Fatal(err)
	}
	// No job with ID 99.
	if _, err := s.Subscribe(ctx, 99, sub("k2"), 1); !errors.Is(err, hubstore.ErrTopicFull) {
		t.Fatalf("no job: %v, want ErrTopicFull", err)
	}
	j, err := s.AddJob(ctx, hubstore.Job{Key: "k2", Host: "h:80", Mode: "subscribe", Topic: "https://a.example/"}, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Subscribe(ctx, j.ID, sub("k2"), 1); !errors.Is(err, hubstore.ErrTopicFull) {
		t.Fatalf("with a job: %v, want ErrTopicFull", err)
	}
	if c, err := s.Counts(ctx); err != nil || c.Subscriptions != 1 || c.Jobs != 0 {
		t.Fatalf("Counts = %+v, %v; want 1 subscription, 0 jobs", c, err)
	}
}
