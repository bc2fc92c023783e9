package fetch

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/internal/testing/faultserver"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rs"
)

func hashesOf(b []byte) rs.Hashes {
	m := md5.Sum(b)
	s := sha256.Sum256(b)
	return rs.Hashes{{Alg: rs.MD5, Value: hex.EncodeToString(m[:])}, {Alg: rs.SHA256, Value: hex.EncodeToString(s[:])}}
}

func content(i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("resource %d;", i)), 50+i%200)
}

// files serves content(i) at /r/i and counts requests.
type files struct{ hits atomic.Int64 }

func (f *files) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.hits.Add(1)
	var i int
	if _, err := fmt.Sscanf(r.URL.Path, "/r/%d", &i); err != nil {
		http.NotFound(w, r)
		return
	}
	b := content(i)
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.Write(b)
}

func newFetcher(t *testing.T) *Fetcher {
	c, _ := testnet.Client(t)
	return &Fetcher{Client: c, BaseDelay: time.Millisecond, MaxDelay: 5 * time.Millisecond, MaxRetryAfter: 10 * time.Millisecond}
}

func noTemp(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), TempPrefix) {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}

func TestFetch(t *testing.T) {
	srv := httptest.NewServer(&files{})
	defer srv.Close()
	good := content(7)
	mtime := time.Date(2013, 1, 2, 13, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		req     func(dir string) Request
		wantErr error
		wantURL string
	}{
		{"ok with md5 and sha-256", func(dir string) Request {
			return Request{URLs: []string{srv.URL + "/r/7"}, Hashes: hashesOf(good), Length: int64(len(good)), HasLength: true,
				Path: filepath.Join(dir, "a/b/7"), ModTime: mtime}
		}, nil, "/r/7"},
		{"ok without metadata", func(dir string) Request {
			return Request{URLs: []string{srv.URL + "/r/7"}, Path: filepath.Join(dir, "7")}
		}, nil, "/r/7"},
		{"primary 404, duplicate serves", func(dir string) Request {
			return Request{URLs: []string{srv.URL + "/missing", srv.URL + "/r/7"}, Hashes: hashesOf(good), Path: filepath.Join(dir, "7")}
		}, nil, "/r/7"},
		{"wrong hash is never installed", func(dir string) Request {
			return Request{URLs: []string{srv.URL + "/r/8"}, Hashes: hashesOf(good), Path: filepath.Join(dir, "8")}
		}, ErrHashMismatch, ""},
		{"wrong length", func(dir string) Request {
			return Request{URLs: []string{srv.URL + "/r/7"}, Length: int64(len(good)) + 1, HasLength: true, Path: filepath.Join(dir, "7")}
		}, ErrLengthMismatch, ""},
		{"not found everywhere", func(dir string) Request {
			return Request{URLs: []string{srv.URL + "/missing", srv.URL + "/gone"}, Path: filepath.Join(dir, "x")}
		}, ErrStatus, ""},
		{"no location", func(dir string) Request { return Request{Path: filepath.Join(dir, "x")} }, ErrNoLocation, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			req := tt.req(dir)
			res, err := newFetcher(t).Fetch(context.Background(), req)
			noTemp(t, dir)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if _, err := os.Stat(req.Path); !os.IsNotExist(err) {
					t.Errorf("a file was installed after a failure: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(req.Path)
			if err != nil || !bytes.Equal(got, good) {
				t.Fatalf("installed %d bytes (%v), want %d", len(got), err, len(good))
			}
			if !strings.HasSuffix(res.URL, tt.wantURL) || res.SHA256 != hashesOf(good).Get(rs.SHA256) {
				t.Errorf("result = %+v", res)
			}
			if !req.ModTime.IsZero() {
				fi, _ := os.Stat(req.Path)
				if !fi.ModTime().Equal(req.ModTime) {
					t.Errorf("mtime %v, want %v", fi.ModTime(), req.ModTime)
				}
			}
		})
	}
}

// TestFetchUnderFaults fetches 200 resources from a server that fails a
// large share of responses in every way it knows; every file must end up
// with the right bytes and no wrong byte may ever be installed.
func TestFetchUnderFaults(t *testing.T) {
	fs := &files{}
	fh := faultserver.New(fs, 0.5, 42)
	fh.SlowDelay = 20 * time.Millisecond
	srv := httptest.NewServer(fh)
	defer srv.Close()
	dir := t.TempDir()
	f := newFetcher(t)
	var retries atomic.Int64
	f.OnRetry = func(string, int, error) { retries.Add(1) }
	for i := 0; i < 200; i++ {
		b := content(i)
		req := Request{URLs: []string{fmt.Sprintf("%s/r/%d", srv.URL, i)}, Hashes: hashesOf(b), Length: int64(len(b)), HasLength: true,
			Path: filepath.Join(dir, fmt.Sprint(i))}
		if _, err := f.Fetch(context.Background(), req); err != nil {
			t.Fatalf("resource %d: %v", i, err)
		}
		got, _ := os.ReadFile(req.Path)
		if !bytes.Equal(got, b) {
			t.Fatalf("resource %d installed with wrong bytes", i)
		}
	}
	noTemp(t, dir)
	counts := fh.Counts()
	t.Logf("faults injected: %v, retries: %d", counts, retries.Load())
	for _, k := range []string{"500", "429", "reset", "truncated", "wrong-bytes", "slow"} {
		if counts[k] == 0 {
			t.Errorf("fault %s never injected", k)
		}
	}
	if retries.Load() < int64(fh.Injected()-counts["slow"]) {
		t.Errorf("%d retries for %d failing responses", retries.Load(), fh.Injected()-counts["slow"])
	}
}

func TestFetchCancel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	f := newFetcher(t)
	f.BaseDelay, f.MaxDelay, f.Retries = time.Second, time.Second, 100
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := f.Fetch(ctx, Request{URLs: []string{srv.URL + "/x"}, Path: filepath.Join(t.TempDir(), "x")})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"3", 3 * time.Second},
		{"0", 0},
		{"", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
	}
	for _, tt := range tests {
		if got := ParseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	f := &Fetcher{MaxRetryAfter: time.Second}
	err := retry.WithRetryAfter(&StatusError{Code: 429}, time.Hour)
	if d := f.policy().Delay(1, err); d != time.Second {
		t.Errorf("Retry-After not capped: %v", d)
	}
	for try := 1; try < 70; try++ {
		if d := (&Fetcher{}).policy().Delay(try, errors.New("x")); d <= 0 || d > 10*time.Second {
			t.Fatalf("delay(%d) = %v", try, d)
		}
	}
}

func TestCleanTemp(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "a"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", TempPrefix+"123"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "a", "keep"), []byte("x"), 0o644)
	n, err := CleanTemp(dir)
	if err != nil || n != 1 {
		t.Fatalf("CleanTemp = %d, %v", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a", "keep")); err != nil {
		t.Error(err)
	}
}

// TestStall: a response that stops sending bytes is abandoned after
// StallTimeout and retried; a stall at every attempt is ErrStalled.
func TestStall(t *testing.T) {
	var n atomic.Int64
	body := bytes.Repeat([]byte("x"), 64<<10)
	release := make(chan struct{})
	defer close(release)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		if n.Add(1) == 1 || r.URL.Path == "/always" {
			w.Write(body[:1000])
			w.(http.Flusher).Flush()
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		w.Write(body)
	}))
	defer srv.Close()
	f := newFetcher(t)
	f.StallTimeout = 100 * time.Millisecond
	dir := t.TempDir()
	res, err := f.Fetch(context.Background(), Request{URLs: []string{srv.URL + "/once"}, Path: filepath.Join(dir, "a")})
	if err != nil || res.Attempts != 2 || res.Length != int64(len(body)) {
		t.Fatalf("stall once: %+v %v", res, err)
	}
	f.Retries = 1
	_, err = f.Fetch(context.Background(), Request{URLs: []string{srv.URL + "/always"}, Path: filepath.Join(dir, "b")})
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("stall always: %v", err)
	}
	noTemp(t, dir)
}
