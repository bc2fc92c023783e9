package origin

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
)

func TestAllowed(t *testing.T) {
	p, err := New("http://Src.example/base/", []string{"cdn.example", "mirror.example:8080", "[::1]"})
	if err != nil {
		t.Fatal(err)
	}
	for u, want := range map[string]bool{
		"http://src.example/x":          true,
		"http://SRC.example:80/x":       true,
		"https://src.example/x":         false, // another scheme is another authority
		"http://src.example:8080/x":     false,
		"http://other.example/x":        false,
		"http://src.example.evil/x":     false,
		"http://cdn.example:9999/x":     true,
		"https://cdn.example/x":         true,
		"http://mirror.example:8080/x":  true,
		"https://mirror.example:8080/x": true,
		"http://mirror.example/x":       false,
		"http://[::1]:1234/x":           true,
		"http://user@other.example/x":   false,
		"http://127.0.0.1:1/x":          false,
	} {
		if err := p.Check(u); (err == nil) != want {
			t.Errorf("%s: Check = %v, want allowed=%v", u, err, want)
		} else if err != nil && (!errors.Is(err, ErrOffOrigin) || !strings.Contains(err.Error(), u)) {
			t.Errorf("%s: error %v does not match ErrOffOrigin or name the URL", u, err)
		}
	}
	if (*Policy)(nil).Check("http://anything/") != nil {
		t.Error("nil policy refused")
	}
	for _, bad := range []string{"", "http://x/", "x:", "a b"} {
		if _, err := New("http://s/", []string{bad}); err == nil {
			t.Errorf("allow %q accepted", bad)
		}
	}
	if _, err := New("relative/", nil); err == nil {
		t.Error("relative source accepted")
	}
}

// TestClientRedirects: two loopback servers on different ports; a
// redirect from the Source to the other one is refused, one within the
// Source is followed, and an allowed host is followed.
func TestClientRedirects(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "other") }))
	defer other.Close()
	var src *httptest.Server
	src = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/x", http.StatusFound)
		case "/home":
			http.Redirect(w, r, src.URL+"/here", http.StatusMovedPermanently)
		default:
			io.WriteString(w, "source")
		}
	}))
	defer src.Close()
	base, _ := testnet.Client(t)
	p, _ := New(src.URL+"/", nil)
	c := p.Client(base)
	for path, want := range map[string]string{"/home": "source", "/away": ""} {
		resp, err := c.Get(src.URL + path)
		if want == "" {
			var oe *Error
			if !errors.Is(err, ErrOffOrigin) || !errors.As(err, &oe) || !oe.Redirect || oe.URL != other.URL+"/x" {
				t.Errorf("%s: err = %v, want a refused redirect to %s/x", path, err, other.URL)
			}
			want := fmt.Sprintf("redirect to %s/x leaves the Source's authority", other.URL)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: message %v, want %q", path, err, want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != want {
			t.Errorf("%s: %q", path, b)
		}
	}
	p2, _ := New(src.URL+"/", []string{strings.TrimPrefix(other.URL, "http://")})
	resp, err := p2.Client(base).Get(src.URL + "/away")
	if err != nil {
		t.Fatalf("allowed host: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "other" {
		t.Errorf("allowed host: %q", b)
	}
	if base.CheckRedirect != nil {
		t.Error("Client modified the client it copied")
	}
}
