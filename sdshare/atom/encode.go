package atom

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/resourcesync-go/resourcesync/sdshare"
)

// ErrUnencodable is returned by Encode for a feed that would not be valid
// Atom (RFC 4287) or valid SDShare: a missing id, title or updated, no
// author, an entry without an alternate link. Nothing is written then.
var ErrUnencodable = errors.New("atom: invalid feed")

// encAtomNS is the Atom namespace the writer declares (sdshare.NS is the
// other one).
const encAtomNS = "http://www.w3.org/2005/Atom"

// TimeFormat is how Encode writes instants: RFC 3339 in UTC with as many
// fractional digits as needed (nanoseconds at most), so that a client's
// since= derived from an entry loses nothing (SD-SRV-7).
const TimeFormat = time.RFC3339Nano

// FormatTime formats t the way Encode does.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeFormat) }

// Validate checks the rules Encode enforces: the feed and every entry have
// an id, a title and an updated instant (SD-SRV-4), the feed has an author
// (SD-SRV-5), every entry has at least one alternate link and at most one
// per type (SD-SRV-6), every link has an href and every entry's
// sdshare:resource values are non-empty.
func Validate(f *Feed) error {
	if f.ID == "" || f.Title == "" || f.Updated.IsZero() {
		return fmt.Errorf("%w: feed needs id, title and updated", ErrUnencodable)
	}
	if f.Author == "" {
		return fmt.Errorf("%w: feed needs an author", ErrUnencodable)
	}
	if err := validLinks(f.Links); err != nil {
		return fmt.Errorf("%w: feed: %w", ErrUnencodable, err)
	}
	for i := range f.Entries {
		e := &f.Entries[i]
		if e.ID == "" || e.Title == "" || e.Updated.IsZero() {
			return fmt.Errorf("%w: entry %d needs id, title and updated", ErrUnencodable, i)
		}
		if err := validLinks(e.Links); err != nil {
			return fmt.Errorf("%w: entry %d: %w", ErrUnencodable, i, err)
		}
		alt := map[string]bool{}
		for _, l := range e.LinksRel("alternate") {
			if alt[l.Type] {
				return fmt.Errorf("%w: entry %d has two alternate links of type %q", ErrUnencodable, i, l.Type)
			}
			alt[l.Type] = true
		}
		if len(alt) == 0 {
			return fmt.Errorf("%w: entry %d has no alternate link", ErrUnencodable, i)
		}
		for _, r := range e.Resources {
			if r == "" {
				return fmt.Errorf("%w: entry %d has an empty sdshare:resource", ErrUnencodable, i)
			}
		}
	}
	return nil
}

func validLinks(ls []Link) error {
	for _, l := range ls {
		if l.Href == "" {
			return fmt.Errorf("link rel %q has no href", l.Rel)
		}
	}
	return nil
}

// Encode writes f as an Atom feed document after checking it with
// Validate. Text is escaped and characters XML 1.0 cannot carry are
// replaced by U+FFFD, so any Go string yields a well-formed document.
// Times are written in UTC with nanoseconds (FormatTime).
func Encode(w io.Writer, f *Feed) error {
	if err := Validate(f); err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	e := &feedWriter{w: bw}
	e.raw(`<?xml version="1.0" encoding="utf-8"?>` + "\n")
	e.raw(`<feed xmlns="` + encAtomNS + `" xmlns:sdshare="` + sdshare.NS + `">` + "\n")
	e.elem("  ", "id", f.ID)
	e.elem("  ", "title", f.Title)
	e.elem("  ", "updated", FormatTime(f.Updated))
	e.raw("  <author>")
	e.elem("", "name", f.Author)
	e.raw("</author>\n")
	for _, l := range f.Links {
		e.link("  ", l)
	}
	for i := range f.Entries {
		en := &f.Entries[i]
		e.raw("  <entry>\n")
		e.elem("    ", "id", en.ID)
		e.elem("    ", "title", en.Title)
		e.elem("    ", "updated", FormatTime(en.Updated))
		if en.Summary != "" {
			e.elem("    ", "summary", en.Summary)
		}
		for _, l := range en.Links {
			e.link("    ", l)
		}
		for _, r := range en.Resources {
			e.elem("    ", "sdshare:resource", r)
		}
		e.raw("  </entry>\n")
	}
	e.raw("</feed>\n")
	if e.err != nil {
		return e.err
	}
	return bw.Flush()
}

type feedWriter struct {
	w   *bufio.Writer
	err error
}

func (e *feedWriter) raw(s string) {
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
	}
}

func (e *feedWriter) elem(indent, name, text string) {
	e.raw(indent + "<" + name + ">")
	e.raw(encEscape(text, false))
	e.raw("</" + name + ">")
	if indent != "" {
		e.raw("\n")
	}
}

func (e *feedWriter) link(indent string, l Link) {
	e.raw(indent + "<link")
	if l.Rel != "" {
		e.raw(` rel="` + encEscape(l.Rel, true) + `"`)
	}
	if l.Type != "" {
		e.raw(` type="` + encEscape(l.Type, true) + `"`)
	}
	e.raw(` href="` + encEscape(l.Href, true) + `"/>` + "\n")
}

// encEscape escapes s for XML text (attr: for a double-quoted attribute
// value) and replaces what XML 1.0 cannot carry.
func encEscape(s string, attr bool) string {
	if plainXML(s) {
		// Most of a feed (URLs, IRIs, dates): nothing to escape. A
		// fragments page of 500 entries escapes some 6,000 strings, a
		// tenth of the SDShare server's CPU a fragment rune by rune.
		return s
	}
	return encEscapeRunes(s, attr)
}

// encEscapeRunes is encEscape rune by rune.
func encEscapeRunes(s string, attr bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '&':
			b.WriteString("&amp;")
		case r == '"' && attr:
			b.WriteString("&quot;")
		case (r == '\n' || r == '\t' || r == '\r') && attr:
			fmt.Fprintf(&b, "&#%d;", r)
		case r == '\r':
			b.WriteString("&#13;")
		case !encXMLChar(r) || (r == utf8.RuneError && n == 1):
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// plainXML reports whether s is printable ASCII without a byte encEscape
// changes.
func plainXML(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '<', c == '>', c == '&', c == '"':
			return false
		}
	}
	return true
}

// encXMLChar reports whether r is a Char of XML 1.0 (production [2]).
func encXMLChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		(r >= 0x20 && r <= 0xD7FF) ||
		(r >= 0xE000 && r <= 0xFFFD) ||
		(r >= 0x10000 && r <= 0x10FFFF)
}
