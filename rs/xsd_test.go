package rs

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/testing/xsdtest"
)

// xsdValidator validates documents with xmllint against sitemap.xsd or
// siteindex.xsd with the ResourceSync 1.1 schema loaded (internal/testing/xsdtest,
// shared with source/server's and sdshare/server's tests).
type xsdValidator = xsdtest.Validator

var errXSDInvalid = xsdtest.ErrInvalid

func newXSDValidator(t testing.TB) *xsdValidator { return xsdtest.New(t, "..") }

// TestXSDExceptions documents, one case each, the documents that are valid
// ResourceSync but that the published schemas reject (RESOURCESYNC.md).
// The Encoder writes them as given; the other XSD tests avoid them.
func TestXSDExceptions(t *testing.T) {
	v := newXSDValidator(t)
	at := NewTime(time.Date(2013, 1, 3, 9, 0, 0, 0, time.UTC))
	rl := func(md Metadata) *Head {
		md.Capability = CapResourceList
		if md.At.IsZero() {
			md.At = at
		}
		return &Head{MD: md, Links: []Link{{Rel: RelUp, Href: "http://example.com/capabilitylist.xml"}}}
	}
	one := []Entry{{Loc: "http://example.com/res1"}}
	tests := []struct {
		rule    string
		why     string
		head    *Head
		entries []Entry
	}{
		{"RS-GEN-11", "sitemap.xsd requires at least one <url>", rl(Metadata{}), nil},
		{"RS-GEN-11", "siteindex.xsd requires at least one <sitemap>",
			&Head{Root: SitemapIndex, MD: Metadata{Capability: CapResourceList, At: at}}, nil},
		{"RS-XSD-3", "type pattern rejects '.'", rl(Metadata{}),
			[]Entry{{Loc: "http://example.com/res1", MD: Metadata{Type: "application/vnd.ms-excel"}}}},
		{"RS-XSD-3", "type pattern rejects parameters", rl(Metadata{}),
			[]Entry{{Loc: "http://example.com/res1", MD: Metadata{Type: "text/html; charset=utf-8"}}}},
		{"RS-DT-3", "xsd:dateTime requires seconds", rl(Metadata{At: TimeWithPrecision(at.Time(), PrecMinute)}), one},
		{"RS-DT-3", "xsd:dateTime requires a time", rl(Metadata{At: TimeWithPrecision(at.Time(), PrecDay)}), one},
	}
	for _, tt := range tests {
		t.Run(tt.rule+"/"+tt.why, func(t *testing.T) {
			doc := encodeDoc(t, tt.head, tt.entries)
			err := v.Validate(tt.rule, doc)
			if !errors.Is(err, errXSDInvalid) {
				t.Fatalf("the schemas accept the document now (err=%v); drop the exception for %s\n%s", err, tt.rule, doc)
			}
		})
	}

	// Not an exception, although RS-XSD-3 lists it: in XSD regular
	// expressions \w is every character but punctuation, separators and
	// others (\p{P}, \p{Z}, \p{C}), and '+' is a math symbol (Sm), so
	// "application/ld+json" matches [\w-]+/[\w-]+.
	t.Run("RS-XSD-3/'+' is accepted", func(t *testing.T) {
		doc := encodeDoc(t, rl(Metadata{}), []Entry{{Loc: "http://example.com/res1", MD: Metadata{Type: "application/ld+json"}}})
		if err := v.Validate("ld+json", doc); err != nil {
			t.Fatal(err)
		}
	})
}

// encodeDoc encodes a whole document or fails the test.
func encodeDoc(t testing.TB, h *Head, entries []Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := NewEncoder(&buf)
	if err := enc.WriteHead(h); err != nil {
		t.Fatal(err)
	}
	for i := range entries {
		if err := enc.WriteEntry(&entries[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
