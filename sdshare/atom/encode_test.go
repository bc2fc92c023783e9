package atom

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/sdshare"
)

func encSampleFeed(title string) *Feed {
	t := time.Date(2026, 11, 24, 1, 2, 3, 456789012, time.FixedZone("x", 3600))
	return &Feed{
		ID: "http://example.org/f", Title: title, Updated: t, Author: "me & you",
		Links: []Link{{Rel: "self", Type: sdshare.AtomType, Href: "http://example.org/f?a=1&b=2"}},
		Entries: []Entry{{
			ID: "urn:x:1", Title: title, Updated: t,
			Links: []Link{
				{Rel: sdshare.RelFragment, Type: "application/n-triples", Href: "http://example.org/x"},
				{Rel: "alternate", Type: "application/n-triples", Href: "http://example.org/x"},
			},
			Resources: []string{"http://example.org/r<1>"},
		}},
	}
}

// TestEncodeRelaxNG: what Encode writes is valid against the Atom RELAX NG
// grammar (SD-SRV-9), including hostile titles.
func TestEncodeRelaxNG(t *testing.T) {
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Skip("xmllint not installed (apt-get install libxml2-utils); the grammar check needs it")
	}
	dir := t.TempDir()
	for i, title := range []string{"plain", "a <b> & \"c\"", "ctl\x00\x01\x1f end", "bad utf8 \xff\xfe", "crlf\r\n\ttab", "\U0001F600 ok"} {
		var b bytes.Buffer
		if err := Encode(&b, encSampleFeed(title)); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "f.xml")
		os.WriteFile(p, b.Bytes(), 0o644)
		out, err := exec.Command(xmllint, "--noout", "--relaxng", "../../testdata/sdshare/schema/atom.rng", p).CombinedOutput()
		if err != nil {
			t.Errorf("case %d (%q): not valid: %v\n%s\n%s", i, title, err, out, b.Bytes())
		}
	}
}

func TestEncodeRefuses(t *testing.T) {
	for name, mod := range map[string]func(*Feed){
		"no feed id":       func(f *Feed) { f.ID = "" },
		"no feed title":    func(f *Feed) { f.Title = "" },
		"no feed updated":  func(f *Feed) { f.Updated = time.Time{} },
		"no author":        func(f *Feed) { f.Author = "" },
		"no entry id":      func(f *Feed) { f.Entries[0].ID = "" },
		"no entry updated": func(f *Feed) { f.Entries[0].Updated = time.Time{} },
		"no alternate":     func(f *Feed) { f.Entries[0].Links = f.Entries[0].Links[:1] },
		"two alternates of one type": func(f *Feed) {
			f.Entries[0].Links = append(f.Entries[0].Links, Link{Type: "application/n-triples", Href: "x"})
		},
		"empty href":     func(f *Feed) { f.Links[0].Href = "" },
		"empty resource": func(f *Feed) { f.Entries[0].Resources = []string{""} },
	} {
		f := encSampleFeed("t")
		mod(f)
		var b bytes.Buffer
		if err := Encode(&b, f); !errors.Is(err, ErrUnencodable) {
			t.Errorf("%s: err = %v, want ErrUnencodable", name, err)
		}
		if b.Len() != 0 {
			t.Errorf("%s: wrote %d bytes", name, b.Len())
		}
	}
}

func TestEncodeTimesUTCNano(t *testing.T) {
	var b bytes.Buffer
	if err := Encode(&b, encSampleFeed("t")); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "<updated>2026-11-24T00:02:03.456789012Z</updated>") {
		t.Errorf("updated not in UTC with nanoseconds:\n%s", b.String())
	}
}

// FuzzEncode: any strings give a well-formed document that carries them
// back (modulo characters XML cannot hold).
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "a", "<&>\"'", "\x00", "\xff", "\r\n", "]]>"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, title, href string) {
		fd := encSampleFeed("x" + title)
		fd.Entries[0].Links[0].Href = "h" + href
		var b bytes.Buffer
		if err := Encode(&b, fd); err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(&b)
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("not well-formed: %v\n%s", err, b.String())
			}
		}
	})
}

// FuzzEscapePlain: the fast path of encEscape gives what escaping rune by
// rune gives.
func FuzzEscapePlain(f *testing.F) {
	for _, s := range []string{"http://x/a?b=c", "a&b", "<x>", "\"q\"", "tab\there", "\x7f", "Zürich", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, attr := range []bool{false, true} {
			if got, want := encEscape(s, attr), encEscapeRunes(s, attr); got != want {
				t.Fatalf("encEscape(%q, %v) = %q, rune by rune %q", s, attr, got, want)
			}
		}
	})
}
