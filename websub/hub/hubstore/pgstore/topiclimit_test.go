package pgstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/pgtest"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// TestTopicLimitConcurrent: verifications run concurrently, on every
// node; the per-topic limit must hold all the same (a subscriber must not
// get past it by sending many requests at once).
func TestTopicLimitConcurrent(t *testing.T) {
	pgtest.Skip(t)
	url := pgtest.Database(t)
	a, b := openT(t, url), openT(t, url)
	const limit, tries = 3, 24
	topic := "https://a.example/t"
	var wg sync.WaitGroup
	var mu sync.Mutex
	full := 0
	start := make(chan struct{})
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := a
			if i%2 == 1 {
				s = b
			}
			cb := fmt.Sprintf("https://cb.example/%d", i)
			<-start
			_, err := s.Subscribe(context.Background(), 0, hubstore.Subscription{Key: topic + "\x00" + cb, Topic: topic, Callback: cb, Lease: 60, Expires: time.Now().Add(time.Hour)}, limit)
			if errors.Is(err, hubstore.ErrTopicFull) {
				mu.Lock()
				full++
				mu.Unlock()
			} else if err != nil {
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	n, err := a.CountSubscriptions(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	if n != limit || full != tries-limit {
		t.Errorf("%d subscriptions (%d refused) after %d concurrent requests; limit %d", n, full, tries, limit)
	}
}
