package atom

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/sdshare"
)

// Namespaces the reader recognises.
const (
	atomNS = "http://www.w3.org/2005/Atom"
	xmlNS  = "http://www.w3.org/XML/1998/namespace"
)

// DefaultMaxBytes is the most Decode reads of one feed document. A server's
// fragments feed is paged, so a page larger than this is hostile or broken.
const DefaultMaxBytes = 64 << 20

// Decoding errors; match with errors.Is.
var (
	// ErrTooLarge: the document is longer than the limit.
	ErrTooLarge = errors.New("atom: feed document too large")
	// ErrNotAtom: the document element is not an Atom feed.
	ErrNotAtom = errors.New("atom: not an Atom feed")
	// ErrSyntax: the document is not well-formed XML.
	ErrSyntax = errors.New("atom: malformed XML")
)

// Decode reads the Atom feed document r with a DefaultMaxBytes limit. See
// DecodeLimit.
func Decode(r io.Reader, base string) (*Feed, error) {
	return DecodeLimit(r, base, DefaultMaxBytes)
}

// DecodeLimit reads the Atom feed document r, reading at most max bytes
// (ErrTooLarge beyond). It is lenient where real feeds are sloppy:
//
//   - dates are RFC 3339 with any fraction (kept to the nanosecond), a
//     lower-case t or z, or an offset without a colon (+0100); a date that
//     cannot be read leaves the field zero, so the caller decides (an entry
//     without updated is malformed, SD-CLI-14);
//   - relative hrefs are resolved against xml:base (on any element, nested)
//     and base, the URL the feed was fetched from;
//   - sdshare:resource is read in the 2012 namespace and in the legacy
//     egovpt one (where Ontopia's sdshare:TopicSI played its part);
//   - elements come in any order, and unknown ones are skipped.
//
// Text values are trimmed of surrounding white space.
func DecodeLimit(r io.Reader, base string, max int64) (*Feed, error) {
	lr := &limitReader{r: r, n: max}
	d := xml.NewDecoder(lr)
	d.Strict = true
	d.CharsetReader = charsetReader
	f, err := decodeFeed(d, base)
	if lr.over {
		return nil, fmt.Errorf("%w (more than %d bytes)", ErrTooLarge, max)
	}
	return f, err
}

// limitReader is io.LimitReader that remembers it cut the input off, so
// the error says "too large" rather than "unexpected EOF".
type limitReader struct {
	r    io.Reader
	n    int64
	over bool
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		// One more byte tells "exactly max" from "more than max".
		var b [1]byte
		n, err := l.r.Read(b[:])
		if n > 0 {
			l.over = true
			return 0, ErrTooLarge
		}
		return 0, err
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}

func charsetReader(label string, r io.Reader) (io.Reader, error) {
	switch strings.ToLower(label) {
	case "utf-8", "utf8", "us-ascii", "ascii":
		return r, nil
	}
	return nil, fmt.Errorf("atom: unsupported charset %q", label)
}

func decodeFeed(d *xml.Decoder, base string) (*Feed, error) {
	root, err := firstStart(d)
	if err != nil {
		return nil, err
	}
	if root.Name.Local != "feed" || root.Name.Space != atomNS {
		return nil, fmt.Errorf("%w: document element is {%s}%s", ErrNotAtom, root.Name.Space, root.Name.Local)
	}
	feedBase := withBase(base, root)
	f := &Feed{}
	if feedBase != base {
		f.Base = feedBase
	}
	for {
		t, err := d.Token()
		if err != nil {
			return nil, syntaxErr(err)
		}
		switch t := t.(type) {
		case xml.EndElement:
			return f, nil
		case xml.StartElement:
			if err := feedChild(d, t, feedBase, f); err != nil {
				return nil, err
			}
		}
	}
}

func feedChild(d *xml.Decoder, t xml.StartElement, base string, f *Feed) error {
	if t.Name.Space != atomNS {
		return skip(d)
	}
	var err error
	switch t.Name.Local {
	case "id":
		f.ID, err = text(d)
	case "title":
		f.Title, err = text(d)
	case "updated":
		var s string
		s, err = text(d)
		f.Updated, _ = ParseTime(s)
	case "author":
		f.Author, err = author(d)
	case "link":
		var l Link
		l, err = link(d, t, base)
		f.Links = append(f.Links, l)
	case "entry":
		var e Entry
		e, err = entry(d, withBase(base, t))
		f.Entries = append(f.Entries, e)
	default:
		err = skip(d)
	}
	return err
}

func entry(d *xml.Decoder, base string) (Entry, error) {
	var e Entry
	for {
		t, err := d.Token()
		if err != nil {
			return e, syntaxErr(err)
		}
		switch t := t.(type) {
		case xml.EndElement:
			return e, nil
		case xml.StartElement:
			if err := entryChild(d, t, base, &e); err != nil {
				return e, err
			}
		}
	}
}

func entryChild(d *xml.Decoder, t xml.StartElement, base string, e *Entry) error {
	var err error
	var s string
	switch {
	case t.Name.Space == atomNS:
		switch t.Name.Local {
		case "id":
			e.ID, err = text(d)
		case "title":
			e.Title, err = text(d)
		case "summary":
			e.Summary, err = text(d)
		case "updated":
			s, err = text(d)
			e.Updated, _ = ParseTime(s)
		case "link":
			var l Link
			l, err = link(d, t, base)
			e.Links = append(e.Links, l)
		default:
			err = skip(d)
		}
	case isResource(t.Name):
		s, err = text(d)
		e.Resources = append(e.Resources, s)
	default:
		err = skip(d)
	}
	return err
}

// isResource tells the elements that name a fragment's resource.
func isResource(n xml.Name) bool {
	switch strings.TrimSuffix(n.Space, "/") {
	case strings.TrimSuffix(sdshare.NS, "/"):
		return n.Local == "resource"
	case sdshare.LegacyNS:
		return n.Local == "resource" || n.Local == "TopicSI"
	}
	return false
}

func link(d *xml.Decoder, t xml.StartElement, base string) (Link, error) {
	var l Link
	for _, a := range t.Attr {
		if a.Name.Space != "" {
			continue
		}
		switch a.Name.Local {
		case "rel":
			l.Rel = strings.TrimSpace(a.Value)
		case "type":
			l.Type = strings.TrimSpace(a.Value)
		case "href":
			l.Href = strings.TrimSpace(a.Value)
		}
	}
	l.Href = resolve(withBase(base, t), l.Href)
	return l, skip(d)
}

func author(d *xml.Decoder) (string, error) {
	var name string
	for {
		t, err := d.Token()
		if err != nil {
			return "", syntaxErr(err)
		}
		switch t := t.(type) {
		case xml.EndElement:
			return name, nil
		case xml.StartElement:
			if t.Name.Space == atomNS && t.Name.Local == "name" {
				if name, err = text(d); err != nil {
					return "", err
				}
			} else if err := skip(d); err != nil {
				return "", err
			}
		}
	}
}

// text returns the character data of the element just started (markup
// inside it, as in type="xhtml" titles, contributes its text).
func text(d *xml.Decoder) (string, error) {
	var b strings.Builder
	depth := 1
	for depth > 0 {
		t, err := d.Token()
		if err != nil {
			return "", syntaxErr(err)
		}
		switch t := t.(type) {
		case xml.StartElement:
			depth++
		case xml.EndElement:
			depth--
		case xml.CharData:
			b.Write(t)
		}
	}
	return strings.TrimSpace(b.String()), nil
}

func skip(d *xml.Decoder) error {
	if err := d.Skip(); err != nil {
		return syntaxErr(err)
	}
	return nil
}

func firstStart(d *xml.Decoder) (xml.StartElement, error) {
	for {
		t, err := d.Token()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return xml.StartElement{}, fmt.Errorf("%w: empty document", ErrNotAtom)
			}
			return xml.StartElement{}, syntaxErr(err)
		}
		if s, ok := t.(xml.StartElement); ok {
			return s, nil
		}
	}
}

func syntaxErr(err error) error {
	if errors.Is(err, ErrTooLarge) {
		return err
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%w: %w", ErrSyntax, err)
}

// withBase returns base changed by t's xml:base, if it has one.
func withBase(base string, t xml.StartElement) string {
	for _, a := range t.Attr {
		if a.Name.Space == xmlNS && a.Name.Local == "base" {
			return resolve(base, strings.TrimSpace(a.Value))
		}
	}
	return base
}

// resolve resolves ref against base; ref unchanged if either does not
// parse (a lenient reader keeps what it was given).
func resolve(base, ref string) string {
	if base == "" {
		return ref
	}
	b, err := parseBase(base)
	if err != nil {
		return ref
	}
	r, err := url.Parse(ref)
	if err != nil {
		return ref
	}
	return b.ResolveReference(r).String()
}

// ParseTime reads an Atom date (RFC 3339 date-time) leniently: fractions
// of any length up to nanoseconds, a lower-case t or z, an offset without
// a colon (+0100) or with only hours (+01). The instant is returned in UTC.
func ParseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if len(s) >= 11 && (s[10] == 't' || s[10] == ' ') {
		s = s[:10] + "T" + s[11:]
	}
	if n := len(s); n > 0 && s[n-1] == 'z' {
		s = s[:n-1] + "Z"
	}
	s = fixOffset(s)
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("atom: bad date %q: %w", s, err)
	}
	return t.UTC(), nil
}

// fixOffset rewrites a trailing ±hhmm or ±hh offset as ±hh:mm.
func fixOffset(s string) string {
	i := strings.LastIndexAny(s, "+-")
	if i < 11 || strings.IndexByte(s[i:], ':') >= 0 {
		return s
	}
	off := s[i+1:]
	for _, c := range off {
		if c < '0' || c > '9' {
			return s
		}
	}
	switch len(off) {
	case 4:
		return s[:i+1] + off[:2] + ":" + off[2:]
	case 2:
		return s[:i+1] + off + ":00"
	}
	return s
}

// lastBase is the base URL parsed last: a feed resolves every link of
// every entry against the same one (a page of 500 fragment entries has
// 4,000 links), and parsing it again for each was a tenth of the SDShare
// client's CPU a fragment. ResolveReference does not modify it.
var lastBase struct {
	sync.Mutex
	s string
	u *url.URL
}

func parseBase(base string) (*url.URL, error) {
	lastBase.Lock()
	if lastBase.u != nil && lastBase.s == base {
		u := lastBase.u
		lastBase.Unlock()
		return u, nil
	}
	lastBase.Unlock()
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	lastBase.Lock()
	lastBase.s, lastBase.u = base, u
	lastBase.Unlock()
	return u, nil
}
