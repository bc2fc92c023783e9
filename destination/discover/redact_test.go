package discover

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/origin"
)

// TestErrorsRedacted: the package's own errors carry no credential of a
// URL (its userinfo password, a token in its query), whatever went
// wrong, so that a program logging them leaks nothing; errors.Is and
// errors.As still see through them. Before, "GET http://user:secret@…"
// was in every message.
func TestErrorsRedacted(t *testing.T) {
	const secret = "s3cr3t-pw"
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, xmlDoc("urlset", "resourcelist", ""))
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/bad.xml":
			fmt.Fprint(w, "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\"><url>")
		case "/nocap.xml":
			fmt.Fprint(w, xmlDoc("urlset", "", ""))
		case "/large.xml":
			fmt.Fprint(w, strings.Repeat(" ", 4096))
		case "/off.xml":
			http.Redirect(w, r, other.URL+"/rl.xml?token="+secret, http.StatusFound)
		case "/500.xml":
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

	tests := []struct {
		name string
		url  string
		is   error // errors.Is must still hold
		opt  func(g *Getter)
	}{
		{"connection refused", closed + "/rl.xml", nil, nil},
		{"404", base + "/missing.xml", ErrStatus, nil},
		{"500 after retries", base + "/500.xml", ErrStatus, nil},
		{"bad XML", base + "/bad.xml", ErrNotResourceSync, nil},
		{"no capability", base + "/nocap.xml", ErrNoCapability, nil},
		{"too large", base + "/large.xml", ErrTooLarge, func(g *Getter) { g.MaxBytes = 100 }},
		{"token in the query", "http://" + host + "/missing.xml?token=" + secret, ErrStatus, nil},
		{"redirect off origin", base + "/off.xml", ErrOffOrigin, func(g *Getter) {
			p, err := origin.New(srv.URL+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			g.Origin = p
		}},
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := getter(t)
			g.Retries = 1
			if tt.opt != nil {
				tt.opt(g)
			}
			var retried []error
			g.OnRetry = func(_ string, _ int, err error) { retried = append(retried, err) }
			_, err := g.Open(context.Background(), tt.url)
			check(t, err, tt.is)
			for _, r := range retried {
				check(t, r, nil)
			}
		})
	}
	t.Run("discover finds nothing", func(t *testing.T) {
		g := getter(t)
		_, err := Discover(context.Background(), g, base+"/nowhere/")
		check(t, err, ErrNotFound)
		var se *StatusError
		if !errors.As(err, &se) {
			t.Fatalf("errors.As(%v, *StatusError) = false", err)
		}
		if strings.Contains(se.Error(), secret) {
			t.Errorf("the *StatusError errors.As finds holds the secret: %s", se)
		}
	})
	t.Run("discover a named document", func(t *testing.T) {
		g := getter(t)
		_, err := Discover(context.Background(), g, base+"/bad.xml")
		check(t, err, ErrNotFound)
	})
}
