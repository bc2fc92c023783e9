// Package atom is the subset of Atom (RFC 4287) and Feed Paging (RFC 5005)
// that SDShare uses: feeds of entries that carry links, an updated instant
// and, on fragment entries, one sdshare:resource. Encode writes strictly
// (every feed valid against the Atom RELAX NG grammar); Decode reads
// leniently (offsets without a colon, legacy namespaces, missing types).
package atom

import "time"

// Feed is an Atom feed document.
type Feed struct {
	ID      string
	Title   string
	Updated time.Time
	Author  string // name of the feed's author
	Links   []Link // feed-level links: self, next, ...
	Entries []Entry
	Base    string // xml:base of the feed, if any (reader only)
}

// Entry is an Atom entry.
type Entry struct {
	ID        string
	Title     string
	Updated   time.Time
	Links     []Link
	Resources []string // sdshare:resource values (exactly one on a fragment entry)
	Summary   string
}

// Link is an atom:link. Rel "" means "alternate" (RFC 4287 4.2.7.2).
type Link struct {
	Rel  string
	Type string
	Href string
}

// Next returns the href of the feed's rel="next" link, or "".
func (f *Feed) Next() string {
	for _, l := range f.Links {
		if l.Rel == "next" {
			return l.Href
		}
	}
	return ""
}

// LinksRel returns e's links whose rel is rel ("alternate" also matches an
// empty rel).
func (e *Entry) LinksRel(rel string) []Link {
	var out []Link
	for _, l := range e.Links {
		r := l.Rel
		if r == "" {
			r = "alternate"
		}
		if r == rel {
			out = append(out, l)
		}
	}
	return out
}
