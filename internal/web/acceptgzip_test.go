package web

import (
	"net/http"
	"testing"
)

// TestAcceptsGzip: the Accept-Encoding defaults of common clients, and
// qualities.
func TestAcceptsGzip(t *testing.T) {
	for _, tc := range []struct {
		ae   []string
		want bool
	}{
		{nil, false},
		{[]string{"identity"}, false},
		{[]string{"gzip"}, true},
		{[]string{"gzip, deflate"}, true},
		{[]string{"GZIP"}, true},
		{[]string{"x-gzip"}, true},
		{[]string{"deflate, br"}, false},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip; q=0.0, identity"}, false},
		{[]string{"gzip;q=0.001"}, true},
		{[]string{"gzip;q=bad"}, false},
		{[]string{"gzip;q=1.0,deflate;q=0.6,identity;q=0.3"}, true},
		{[]string{"*"}, true},
		{[]string{"*;q=0"}, false},
		{[]string{"gzip;q=0, *"}, false},
		{[]string{"br", "gzip"}, true},
	} {
		r, _ := http.NewRequest("GET", "http://x/", nil)
		for _, v := range tc.ae {
			r.Header.Add("Accept-Encoding", v)
		}
		if got := AcceptsGzip(r); got != tc.want {
			t.Errorf("%q: %v, want %v", tc.ae, got, tc.want)
		}
	}
}

func FuzzAcceptsGzip(f *testing.F) {
	for _, s := range []string{"gzip", "gzip;q=0", "*;q=0.5, identity", "x-gzip; q=1;q=0", ";;,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ae string) {
		r, _ := http.NewRequest("GET", "http://x/", nil)
		r.Header.Set("Accept-Encoding", ae)
		AcceptsGzip(r) // must not panic
	})
}
