package aggregate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/sdshare/client"
)

// TestClassify: errors as the Destination, the HTTP client and the parsers
// produce them against real servers on loopback, and the Reason of each.
func TestClassify(t *testing.T) {
	hc, _ := testnet.Client(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/"
	ln.Close()
	serve := func(h http.HandlerFunc) string {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		return srv.URL + "/"
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	hang := serve(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	})
	code := func(c int) string { return serve(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(c) }) }
	html := serve(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>not a Source</body></html>")
	})
	sync := func(u string) error {
		_, err := destination.Sync(context.Background(), u, destination.Options{Dest: t.TempDir(), Client: hc, Retries: -1})
		return err
	}
	get := func(c *http.Client, ctx context.Context, u string) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	short := &http.Client{Transport: hc.Transport, Timeout: 50 * time.Millisecond}

	cases := []struct {
		name string
		err  func() error
		want string
	}{
		{"nil", func() error { return nil }, ""},
		{"connection refused (net.OpError)", func() error { return get(hc, context.Background(), closed) }, ReasonUnreachable},
		{"discovery: refused", func() error { return sync(closed) }, ReasonUnreachable},
		{"client timeout", func() error { return get(short, context.Background(), hang) }, ReasonStalled},
		{"context deadline", func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			return get(hc, ctx, hang)
		}, ReasonStalled},
		{"discovery: 401", func() error { return sync(code(401)) }, ReasonAuth},
		{"discovery: 403", func() error { return sync(code(403)) }, ReasonAuth},
		{"discovery: 404", func() error { return sync(code(404)) }, ReasonHTTP},
		{"discovery: 500", func() error { return sync(code(500)) }, ReasonHTTP},
		{"discovery: not a ResourceSync document", func() error { return sync(html) }, ReasonHostile},
		{"rs syntax", func() error {
			_, err := rs.NewDecoder(strings.NewReader(`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>`)).Next()
			return err
		}, ReasonHostile},
		{"rdf syntax", func() error {
			for _, err := range rdf.Parse(strings.NewReader("<a> <b> ."), rdf.NTriples, "") {
				if err != nil {
					return err
				}
			}
			return nil
		}, ReasonHostile},
		{"sdshare state locked", func() error {
			dir := t.TempDir()
			s, err := client.OpenState(dir)
			if err != nil {
				return err
			}
			defer s.Close()
			_, err = client.OpenState(dir)
			return err
		}, ReasonLocked},
		{"destination locked", func() error { return fmt.Errorf("x: %w", destination.ErrLocked) }, ReasonLocked},
		{"destination state", func() error { return fmt.Errorf("x: %w", destination.ErrState) }, ReasonState},
		{"discovery without a cause", func() error { return fmt.Errorf("%w: no set %q", destination.ErrDiscovery, "x") }, ReasonConfig},
		{"anything else", func() error { return errors.New("disk on fire") }, ReasonError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.err()
			if (err == nil) != (tc.want == "") {
				t.Fatalf("error %v", err)
			}
			if got := classify(err); got != tc.want {
				t.Errorf("classify(%v) = %q, want %q", err, got, tc.want)
			}
		})
	}
}
