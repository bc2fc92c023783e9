package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/origin"
	"github.com/resourcesync-go/resourcesync/rs"
)

// TestErrorsRedacted: Fetch's errors (and OnRetry's) carry no credential
// of a URL (its userinfo password, a token in its query), whatever went
// wrong, so that a program logging them leaks nothing; errors.Is and
// errors.As still see through them. Before, "fetch http://user:secret@…"
// began every message.
func TestErrorsRedacted(t *testing.T) {
	const secret = "s3cr3t-pw"
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "elsewhere")
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			fmt.Fprint(w, "hello")
		case "/off":
			http.Redirect(w, r, other.URL+"/x?token="+secret, http.StatusFound)
		case "/500":
			w.WriteHeader(http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	base := "http://user:" + secret + "@" + host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://user:" + secret + "@" + ln.Addr().String()
	ln.Close()
	bad := rs.Hashes{{Alg: rs.SHA256, Value: strings.Repeat("00", 32)}}

	tests := []struct {
		name   string
		url    string
		length int64
		hashes rs.Hashes
		is     error
		origin bool
	}{
		{"connection refused", closed + "/ok", -1, nil, nil, false},
		{"404", base + "/missing", -1, nil, ErrStatus, false},
		{"500 after retries", base + "/500", -1, nil, ErrStatus, false},
		{"length mismatch", base + "/ok", 3, nil, ErrLengthMismatch, false},
		{"hash mismatch", base + "/ok", -1, bad, ErrHashMismatch, false},
		{"token in the query", "http://" + host + "/missing?token=" + secret, -1, nil, ErrStatus, false},
		{"redirect off origin", base + "/off", -1, nil, ErrOffOrigin, true},
		{"location off origin", "http://user:" + secret + "@" + strings.TrimPrefix(other.URL, "http://") + "/x", -1, nil, ErrOffOrigin, true},
	}
	check := func(t *testing.T, err error, is error) {
		t.Helper()
		if err == nil {
			t.Fatal("no error")
		}
		for _, form := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err)} {
			if strings.Contains(form, secret) {
				t.Errorf("the error holds the secret: %s", form)
			}
		}
		if is != nil && !errors.Is(err, is) {
			t.Errorf("errors.Is(%v, %v) = false", err, is)
		}
		var se *StatusError
		if errors.As(err, &se) && strings.Contains(se.Error(), secret) {
			t.Errorf("the *StatusError errors.As finds holds the secret: %s", se)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFetcher(t)
			f.Retries = 1
			if tt.origin {
				p, err := origin.New(srv.URL+"/", nil)
				if err != nil {
					t.Fatal(err)
				}
				f.Origin = p
			}
			var retried []error
			f.OnRetry = func(_ string, _ int, err error) { retried = append(retried, err) }
			req := Request{URLs: []string{tt.url}, Path: filepath.Join(t.TempDir(), "f"), Hashes: tt.hashes}
			if tt.length >= 0 {
				req.Length, req.HasLength = tt.length, true
			}
			_, err := f.Fetch(context.Background(), req)
			check(t, err, tt.is)
			for _, r := range retried {
				check(t, r, nil)
			}
		})
	}
}
