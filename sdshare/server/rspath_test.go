package server

import (
	"strings"
	"testing"
)

func TestRSPath(t *testing.T) {
	long := "http://example.org/" + strings.Repeat("ab/", 200)
	iris := []string{
		"http://example.org/a", "http://example.org/A", "http://example.org/a/",
		"http://example.org/dir/c?x=1#f", "urn:isbn:0451450523", "http://example.org/ü",
		"http://example.org/a_5F", "http://example.org/..", long, long + "x",
	}
	seen := map[string]string{}
	for _, iri := range iris {
		p := rsPath(iri)
		if prev, dup := seen[strings.ToLower(p)]; dup {
			t.Errorf("%q and %q share the path %s (ignoring case)", prev, iri, p)
		}
		seen[strings.ToLower(p)] = iri
		for _, seg := range strings.Split(p, "/") {
			if seg == "" || len(seg) > 255 || strings.HasPrefix(seg, ".") || seg == ".." {
				t.Errorf("rsPath(%q) = %q: segment %q is not a safe file name", iri, p, seg)
			}
			if strings.Trim(seg, "abcdefghijklmnopqrstuvwxyz0123456789-_ABCDEF~.") != "" {
				t.Errorf("rsPath(%q) = %q: unexpected characters", iri, p)
			}
		}
		back, err := rsIRI(p)
		if err != nil || back != iri {
			t.Errorf("rsIRI(rsPath(%q)) = %q, %v", iri, back, err)
		}
	}
	for _, bad := range []string{"", "x", "zz/a", "00/a.nt", rsPath("http://x/a") + "x", "0/a.nt", "ab/_4.nt", "ab/_ZZ.nt", "ab/a~.nt"} {
		if iri, err := rsIRI(bad); err == nil {
			t.Errorf("rsIRI(%q) = %q, want an error", bad, iri)
		}
	}
}

func FuzzRSPath(f *testing.F) {
	f.Add("http://example.org/a?b#c")
	f.Add(strings.Repeat("é", 300))
	f.Fuzz(func(t *testing.T, iri string) {
		back, err := rsIRI(rsPath(iri))
		if err != nil || back != iri {
			t.Fatalf("round trip of %q: %q, %v", iri, back, err)
		}
		rsIRI(iri) // any input: no panic
	})
}
