package httpclient

import (
	"strings"
	"testing"
)

func TestAssumeHTTPS(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"example.org/rs", "https://example.org/rs"},
		{"example.org", "https://example.org"},
		{"www.example.org/.well-known/resourcesync", "https://www.example.org/.well-known/resourcesync"},
		{"localhost:8080/rs", "https://localhost:8080/rs"},
		{"127.0.0.1:8080", "https://127.0.0.1:8080"},
		{"[::1]:8080/x", "https://[::1]:8080/x"},
		{"example.org?a=b", "https://example.org?a=b"},
		// As typed: a URL, or something that reads as a local path.
		{"https://example.org/rs", ""}, {"http://example.org", ""}, {"ftp://example.org", ""},
		{"rs/collection", ""}, {"mirror", ""}, {"./example.org", ""}, {"../example.org/x", ""},
		{"/srv/example.org", ""}, {"~/example.org", ""}, {"C:/data/example.org", ""}, {`C:\data`, ""},
		{"dir\\example.org", ""}, {"my dir/example.org", ""}, {"example.org:http/x", ""},
		{"mailto:someone@example.org", ""}, {"example.123/x", ""}, {"-example.org", ""}, {"example..org", ""},
		{"[::1]/x", ""}, {"", ""},
	} {
		got, ok := AssumeHTTPS(tc.in)
		want := tc.want
		if want == "" {
			want = tc.in
		}
		if got != want || ok != (tc.want != "") {
			t.Errorf("AssumeHTTPS(%q) = %q, %v; want %q", tc.in, got, ok, want)
		}
	}
}

func FuzzAssumeHTTPS(f *testing.F) {
	for _, s := range []string{"example.org/rs", "localhost:80", "./x", "C:/x", "[::1]:1/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := AssumeHTTPS(s)
		if !ok {
			if got != s {
				t.Fatalf("%q changed to %q without ok", s, got)
			}
			return
		}
		if got != "https://"+s || strings.HasPrefix(s, "/") || strings.HasPrefix(s, ".") {
			t.Fatalf("%q taken as %q", s, got)
		}
		if again, ok := AssumeHTTPS(got); ok || again != got {
			t.Fatalf("%q: taken twice", got)
		}
	})
}
