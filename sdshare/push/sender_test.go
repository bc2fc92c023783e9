package push

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

type memCursor struct {
	mu  sync.Mutex
	seq uint64
}

func (m *memCursor) LoadCursor(context.Context) (uint64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seq, nil
}

func (m *memCursor) SaveCursor(_ context.Context, s uint64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq = s
	return nil
}

func sliceItems(items []Item) Items {
	return func(ctx context.Context, after uint64) iter.Seq2[Item, error] {
		return func(yield func(Item, error) bool) {
			for _, it := range items {
				if it.Seq > after && !yield(it, nil) {
					return
				}
			}
		}
	}
}

type got struct {
	resource, graph, ctype, body string
}

// TestSenderInOrderThroughFaults: every item arrives, in order, although
// the receiver answers 503, 500 with Retry-After and drops connections;
// a restarted sender resumes after the acknowledged cursor (SD-PUSH-1..6).
func TestSenderInOrderThroughFaults(t *testing.T) {
	var mu sync.Mutex
	var received []got
	attempt := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		attempt++
		n := attempt
		mu.Unlock()
		switch {
		case n%5 == 1:
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case n%5 == 2:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusInternalServerError)
			return
		case n%7 == 3:
			hj, _ := w.(http.Hijacker)
			c, _, _ := hj.Hijack()
			c.Close()
			return
		}
		if r.Method != http.MethodPost {
			t.Errorf("method %s", r.Method)
		}
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		received = append(received, got{r.URL.Query().Get("resource"), r.URL.Query().Get("graph"), r.Header.Get("Content-Type"), string(b)})
		mu.Unlock()
	}))
	defer srv.Close()
	client, _ := testnet.Client(t)

	var items []Item
	for i := 1; i <= 40; i++ {
		body := fmt.Sprintf("<http://ex/r%d> <http://ex/p> \"%d\" .\n", i, i)
		if i%10 == 0 {
			body = "" // deleted
		}
		items = append(items, Item{Seq: uint64(i), Resource: fmt.Sprintf("http://ex/r%d", i), Graph: "g", Body: []byte(body)})
	}
	cur := &memCursor{}
	run := func(upto int) {
		ctx, cancel := context.WithCancel(context.Background())
		s := &Sender{URL: srv.URL + "/push?x=1", Client: client, Items: sliceItems(items[:upto]), Cursor: cur,
			BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, Poll: time.Millisecond}
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		for s.Stats().Cursor < uint64(upto) {
			select {
			case err := <-done:
				t.Fatalf("Run ended: %v", err)
			case <-time.After(time.Millisecond):
			}
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Run: %v", err)
		}
	}
	run(25) // first sender process
	run(40) // restarted, with more items
	mu.Lock()
	defer mu.Unlock()
	if len(received) != 40 {
		t.Fatalf("received %d items, want 40", len(received))
	}
	for i, g := range received {
		want := items[i]
		if g.resource != want.Resource || g.graph != "g" || g.body != string(want.Body) {
			t.Errorf("item %d: got %+v, want %+v", i, g, want)
		}
		if g.ctype != "application/n-triples; charset=utf-8" {
			t.Errorf("item %d: Content-Type %q", i, g.ctype)
		}
	}
}

func TestPushURL(t *testing.T) {
	for _, c := range []struct{ base, r, g, want string }{
		{"http://h/p", "http://ex/a b", "", "http://h/p?resource=http%3A%2F%2Fex%2Fa+b"},
		{"http://h/p?k=v", "http://ex/a", "G", "http://h/p?graph=G&k=v&resource=http%3A%2F%2Fex%2Fa"},
	} {
		got, err := PushURL(c.base, c.r, c.g)
		if err != nil || got != c.want {
			t.Errorf("PushURL(%q, %q, %q) = %q, %v; want %q", c.base, c.r, c.g, got, err, c.want)
		}
	}
}

// TestSenderUnsequenced: items with Seq 0 are delivered and leave the
// cursor where it was; sequenced items still move it.
func TestSenderUnsequenced(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.Query().Get("resource"))
		mu.Unlock()
	}))
	defer srv.Close()
	client, _ := testnet.Client(t)
	cur := &memCursor{seq: 5}
	items := []Item{{Resource: "u1"}, {Resource: "u2"}, {Seq: 3, Resource: "old"}, {Seq: 6, Resource: "s6"}}
	s := &Sender{URL: srv.URL, Client: client, Cursor: cur, Poll: time.Millisecond,
		Items: func(ctx context.Context, after uint64) iter.Seq2[Item, error] {
			return func(yield func(Item, error) bool) {
				for _, it := range items {
					if !yield(it, nil) {
						return
					}
				}
			}
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	for s.Stats().Cursor != 6 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 3 || got[0] != "u1" || got[1] != "u2" || got[2] != "s6" {
		t.Errorf("delivered %v, want u1 u2 s6 (old skipped)", got)
	}
	if c, _ := cur.LoadCursor(ctx); c != 6 {
		t.Errorf("cursor %d, want 6", c)
	}
}

// TestSenderVersionHeaders: each POST says where its fragment stands in the
// resource's history, so a receiver can refuse a late older copy: the
// change instant when the item has one, else its sequence number.
func TestSenderVersionHeaders(t *testing.T) {
	type seen struct{ resource, updated, seq string }
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, seen{r.URL.Query().Get("resource"), r.Header.Get(HeaderUpdated), r.Header.Get(HeaderSequence)})
		mu.Unlock()
	}))
	defer srv.Close()
	client, _ := testnet.Client(t)
	at := time.Date(2026, 11, 24, 1, 2, 3, 456789000, time.FixedZone("", 3600))
	items := []Item{
		{Resource: "initial", Updated: at},
		{Seq: 7, Resource: "dated", Updated: at.Add(time.Second)},
		{Seq: 8, Resource: "undated"},
	}
	cur := &memCursor{}
	s := &Sender{URL: srv.URL, Client: client, Cursor: cur, Poll: time.Millisecond,
		Items: func(ctx context.Context, after uint64) iter.Seq2[Item, error] {
			return func(yield func(Item, error) bool) {
				for _, it := range items {
					if (it.Seq == 0 && after == 0) || it.Seq > after {
						if !yield(it, nil) {
							return
						}
					}
				}
			}
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	for s.Stats().Cursor != 8 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	want := []seen{
		{"initial", "2026-11-24T00:02:03.456789Z", ""},
		{"dated", "2026-11-24T00:02:04.456789Z", ""},
		{"undated", "", "8"},
	}
	if len(got) < len(want) {
		t.Fatalf("got %d requests %v, want %v", len(got), got, want)
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("request %d: %+v, want %+v", i, got[i], w)
		}
	}
}
