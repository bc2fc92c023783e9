package hub

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// BenchmarkFanOut1000 publishes one notification (fsync'd) to 1,000
// verified subscribers on loopback and waits for the last delivery; it
// reports the time to the last delivery and deliveries/s.
//
//	go test -run '^$' -bench FanOut1000 -benchtime 20x ./websub/hub
func BenchmarkFanOut1000(b *testing.B) {
	const n = 1000
	var delivered atomic.Int64
	sub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			io.WriteString(w, r.URL.Query().Get("hub.challenge"))
			return
		}
		io.Copy(io.Discard, r.Body)
		delivered.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer sub.Close()
	cfg := fastConfig(b.TempDir())
	cfg.NoSync = false
	cfg.MaxConcurrentPerHost = 64
	cfg.MaxPendingPerHost = n
	cfg.URL = "http://127.0.0.1:1/hub"
	g := &dialGuard{}
	cfg.DialControl = g.control
	h, err := Open(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	defer func() { cancel(); <-done; h.Close() }()
	topic := "http://127.0.0.1:1/changes.xml"
	for i := range n {
		j := &hubstore.Job{Key: subKey(topic, sub.URL+"/cb/"+strconv.Itoa(i)), Mode: "subscribe", Topic: topic,
			Callback: sub.URL + "/cb/" + strconv.Itoa(i), Lease: 3600}
		if err := h.addJob(ctx, j); err != nil {
			b.Fatal(err)
		}
	}
	h.wakeVerifier()
	for h.heldCount() < n { // verified and delivered by this node
		time.Sleep(5 * time.Millisecond)
	}
	body := make([]byte, 2048)
	var worst time.Duration
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		t0 := time.Now()
		if _, err := h.Publish(ctx, topic, "application/xml", body, nil); err != nil {
			b.Fatal(err)
		}
		for delivered.Load() < int64((i+1)*n) {
			time.Sleep(100 * time.Microsecond)
		}
		worst = max(worst, time.Since(t0))
	}
	el := time.Since(start)
	b.ReportMetric(float64(el.Milliseconds())/float64(b.N), "ms/last-delivery")
	b.ReportMetric(float64(worst.Milliseconds()), "ms-worst")
	b.ReportMetric(float64(b.N*n)/el.Seconds(), "deliveries/s")
}
