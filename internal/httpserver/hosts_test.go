package httpserver

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.3.4.5": true, "::1": true, "[::1]": true, "[::1]:80": true, "localhost": true,
		"LOCALHOST.": true, "localhost:8080": true, "a.localhost": true,
		"": false, "0.0.0.0": false, "::": false, "192.0.2.1": false, "example.org": false,
		"127.0.0.1.evil.example": false, "localhost.evil.example": false,
	} {
		if LoopbackHost(host) != want {
			t.Errorf("LoopbackHost(%q) = %v", host, !want)
		}
	}
}

// TestLoopbackHostsPublic: besides this machine's names, the public
// hosts given are answered (a reverse proxy passes its Host on), with or
// without port, in any case; a rebound name is refused.
func TestLoopbackHostsPublic(t *testing.T) {
	h := LoopbackHosts(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), "Data.Example.org:443", "")
	for host, want := range map[string]int{
		"127.0.0.1:8080": 200, "data.example.org": 200, "DATA.example.org.:8443": 200,
		"rebind.evil.example": http.StatusMisdirectedRequest, "example.org": http.StatusMisdirectedRequest,
		"": http.StatusMisdirectedRequest,
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code != want {
			t.Errorf("Host %q: %d, want %d", host, rec.Code, want)
		}
	}
}

// TestServeGuardsLoopback: with PublicHosts set, a server on loopback
// refuses a foreign Host; without it (nil), it does not.
func TestServeGuardsLoopback(t *testing.T) {
	for _, tc := range []struct {
		hosts []string
		want  int
	}{{[]string{"public.example"}, http.StatusMisdirectedRequest}, {nil, http.StatusOK}} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), Options{PublicHosts: tc.hosts})
		go s.Serve(ln)
		for host, want := range map[string]int{"rebind.evil.example": tc.want, "public.example": 200, ln.Addr().String(): 200} {
			req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/", nil)
			req.Host = host
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				t.Errorf("PublicHosts %v, Host %q: %d, want %d", tc.hosts, host, resp.StatusCode, want)
			}
		}
		s.Close()
	}
}
