package harvest

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

	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

// TestErrorsRedacted: Harvest's error and Status's LastError carry no
// credential of the endpoint's URL (a userinfo password, a token in its
// query), so that a program logging them leaks nothing; errors.Is still
// sees through. Before, "oai-pmh harvest http://user:secret@…" began
// them.
func TestErrorsRedacted(t *testing.T) {
	const secret = "s3cr3t-pw"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/bad":
			w.Header().Set("Content-Type", "text/xml")
			fmt.Fprint(w, "<OAI-PMH")
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://user:" + secret + "@" + ln.Addr().String() + "/oai"
	ln.Close()
	for _, tc := range []struct{ name, endpoint string }{
		{"connection refused", closed},
		{"404", "http://user:" + secret + "@" + host + "/oai"},
		{"not XML", "http://user:" + secret + "@" + host + "/bad"},
		{"token in the query", "http://" + host + "/oai?token=" + secret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := testnet.Client(t)
			base := t.TempDir()
			h, err := New(Config{Endpoint: tc.endpoint, Dir: filepath.Join(base, "records"), State: filepath.Join(base, "state"), Client: c})
			if err != nil {
				t.Fatal(err)
			}
			defer h.Close()
			h.policy = retry.Policy{Retries: -1}
			_, err = h.Harvest(context.Background())
			if err == nil {
				t.Fatal("no error")
			}
			for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), h.Status().LastError} {
				if strings.Contains(s, secret) {
					t.Errorf("holds the secret: %s", s)
				}
			}
			if errors.Unwrap(err) == nil {
				t.Errorf("%v wraps nothing", err)
			}
		})
	}
	_, err = New(Config{Endpoint: "ftp://user:" + secret + "@" + host + "/", Dir: t.TempDir(), State: t.TempDir()})
	if err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("New with a bad endpoint: %v", err)
	}
}
