package rdf

import "testing"

// TestResolveIRI runs the examples of RFC 3986 section 5.4 (normal and
// abnormal) plus the cases RDF documents meet (empty base, fragments).
func TestResolveIRI(t *testing.T) {
	const base = "http://a/b/c/d;p?q"
	tests := []struct{ ref, want string }{
		// 5.4.1 normal examples
		{"g:h", "g:h"},
		{"g", "http://a/b/c/g"},
		{"./g", "http://a/b/c/g"},
		{"g/", "http://a/b/c/g/"},
		{"/g", "http://a/g"},
		{"//g", "http://g"},
		{"?y", "http://a/b/c/d;p?y"},
		{"g?y", "http://a/b/c/g?y"},
		{"#s", "http://a/b/c/d;p?q#s"},
		{"g#s", "http://a/b/c/g#s"},
		{"g?y#s", "http://a/b/c/g?y#s"},
		{";x", "http://a/b/c/;x"},
		{"g;x", "http://a/b/c/g;x"},
		{"g;x?y#s", "http://a/b/c/g;x?y#s"},
		{"", "http://a/b/c/d;p?q"},
		{".", "http://a/b/c/"},
		{"./", "http://a/b/c/"},
		{"..", "http://a/b/"},
		{"../", "http://a/b/"},
		{"../g", "http://a/b/g"},
		{"../..", "http://a/"},
		{"../../", "http://a/"},
		{"../../g", "http://a/g"},
		// 5.4.2 abnormal examples
		{"../../../g", "http://a/g"},
		{"../../../../g", "http://a/g"},
		{"/./g", "http://a/g"},
		{"/../g", "http://a/g"},
		{"g.", "http://a/b/c/g."},
		{".g", "http://a/b/c/.g"},
		{"g..", "http://a/b/c/g.."},
		{"..g", "http://a/b/c/..g"},
		{"./../g", "http://a/b/g"},
		{"./g/.", "http://a/b/c/g/"},
		{"g/./h", "http://a/b/c/g/h"},
		{"g/../h", "http://a/b/c/h"},
		{"g;x=1/./y", "http://a/b/c/g;x=1/y"},
		{"g;x=1/../y", "http://a/b/c/y"},
		{"g?y/./x", "http://a/b/c/g?y/./x"},
		{"g?y/../x", "http://a/b/c/g?y/../x"},
		{"g#s/./x", "http://a/b/c/g#s/./x"},
		{"g#s/../x", "http://a/b/c/g#s/../x"},
		{"http:g", "http:g"}, // strict parsers
	}
	for _, tc := range tests {
		if got := ResolveIRI(base, tc.ref); got != tc.want {
			t.Errorf("ResolveIRI(%q, %q) = %q, want %q", base, tc.ref, got, tc.want)
		}
	}
	others := []struct{ base, ref, want string }{
		{"", "rel/x", "rel/x"},
		{"http://example.org", "x", "http://example.org/x"},
		{"http://example.org/a#frag", "#b", "http://example.org/a#b"},
		{"http://example.org/a/", "", "http://example.org/a/"},
		{"urn:isbn:123", "#x", "urn:isbn:123#x"},
		{"file:///tmp/a.ttl", "b.ttl", "file:///tmp/b.ttl"},
		// not schemes: a digit first, a character schemes do not have
		{"http://a/b/", "0:x", "http://a/b/0:x"},
		{"http://a/b/", "a!:x", "http://a/b/a!:x"},
		{"http://a/b/", "\x7f:", "http://a/b/\x7f:"},
		{"http://a/b/", "a+b-c.d:x", "a+b-c.d:x"},
	}
	for _, tc := range others {
		if got := ResolveIRI(tc.base, tc.ref); got != tc.want {
			t.Errorf("ResolveIRI(%q, %q) = %q, want %q", tc.base, tc.ref, got, tc.want)
		}
	}
}
