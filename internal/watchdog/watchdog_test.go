package watchdog

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// server answers /stall-headers after never, /stall-body with headers and
// then nothing, /trickle one byte every 20ms, /ok at once. Handlers end
// when the client goes or the test ends.
func server(t *testing.T) *httptest.Server {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait := func(d time.Duration) bool {
			select {
			case <-r.Context().Done():
				return false
			case <-done:
				return false
			case <-time.After(d):
				return true
			}
		}
		switch r.URL.Path {
		case "/stall-headers":
			wait(time.Hour)
		case "/stall-body":
			w.Write([]byte("<urlset"))
			w.(http.Flusher).Flush()
			wait(time.Hour)
		case "/trickle":
			for range 1000 {
				if _, err := w.Write([]byte("x")); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				if !wait(20 * time.Millisecond) {
					return
				}
			}
		case "/ok":
			w.Write([]byte(strings.Repeat("y", 100000)))
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return srv
}

func get(t *testing.T, url string, l Limits) (int, error) {
	ctx, w := Start(context.Background(), l)
	defer w.Stop()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if e := w.Err(); e != nil {
			return 0, e
		}
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(w.Body(resp.Body))
	if e := w.Err(); e != nil {
		return len(b), e
	}
	return len(b), err
}

func TestWatch(t *testing.T) {
	srv := server(t)
	for _, tc := range []struct {
		path string
		l    Limits
		want error
	}{
		{"/stall-headers", Limits{Idle: 100 * time.Millisecond}, ErrStalled},
		{"/stall-body", Limits{Idle: 100 * time.Millisecond}, ErrStalled},
		{"/stall-body", Limits{MinRate: 100, Window: 100 * time.Millisecond}, ErrTooSlow},
		// 50 bytes/s trickle: never idle for 100ms, but below 1000 B/s.
		{"/trickle", Limits{Idle: 100 * time.Millisecond, MinRate: 1000, Window: 150 * time.Millisecond}, ErrTooSlow},
		{"/ok", Limits{Idle: time.Second, MinRate: 1000, Window: 150 * time.Millisecond}, nil},
		{"/ok", Limits{}, nil},
	} {
		n, err := get(t, srv.URL+tc.path, tc.l)
		if tc.want == nil {
			if err != nil || n != 100000 {
				t.Errorf("%s %+v: %d bytes, %v", tc.path, tc.l, n, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%s %+v: err = %v, want %v", tc.path, tc.l, err, tc.want)
		}
		if tc.path == "/stall-headers" && !strings.Contains(err.Error(), "timeout awaiting response headers (100ms)") {
			t.Errorf("%s: %v does not say the headers never came", tc.path, err)
		}
		if tc.path == "/stall-body" && tc.want == ErrStalled && !strings.Contains(err.Error(), "no bytes for 100ms") {
			t.Errorf("%s: %v does not say the body stalled", tc.path, err)
		}
	}
}

func TestNilWatch(t *testing.T) {
	ctx, w := Start(context.Background(), Limits{})
	if w != nil || ctx != context.Background() {
		t.Fatal("zero Limits started a Watch")
	}
	r := strings.NewReader("abc")
	if w.Body(r) != io.Reader(r) || w.Err() != nil {
		t.Error("nil Watch changed something")
	}
	w.Stop()
}
