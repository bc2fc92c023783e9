package client

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Errors of the bounds on what a server can make one run follow and hold
// (issue 24, item 2); match with errors.Is.
var (
	ErrFeedLoop     = errors.New("sdshare client: feed page seen before (a loop)")
	ErrTooManyPages = errors.New("sdshare client: too many feed pages")
	ErrRunFeedBytes = errors.New("sdshare client: too many bytes of feed documents in one run")
	ErrURLTooLong   = errors.New("sdshare client: URL too long")
)

// pageSet remembers the pages of one feed followed so far, for loop
// detection: 8 bytes a page, whatever the length of the URLs (a server
// naming its pages with 4 MiB URLs once took the client past 1 GB after
// 150 pages, when the set held the URLs).
type pageSet map[uint64]struct{}

// add records the page u, or returns ErrFeedLoop when it was followed
// before, or ErrTooManyPages when max pages were.
func (p pageSet) add(u string, max int) error {
	k := pageKey(u)
	if _, ok := p[k]; ok {
		return fmt.Errorf("%w: %s", ErrFeedLoop, shorten(u))
	}
	if len(p) >= max {
		return fmt.Errorf("%w: more than %d pages, the next %s", ErrTooManyPages, max, shorten(u))
	}
	p[k] = struct{}{}
	return nil
}

// pageKey is a 64-bit digest of u normalised: without its fragment (which
// never reaches the server), scheme and host lower-cased. A collision
// (about 2^-40 in a million pages) ends the feed as a loop: an error, not
// a wrong store.
func pageKey(u string) uint64 {
	u = withoutFragment(u)
	if pu, err := url.Parse(u); err == nil {
		pu.Scheme, pu.Host = strings.ToLower(pu.Scheme), strings.ToLower(pu.Host)
		u = pu.String()
	}
	sum := sha256.Sum256([]byte(u))
	return binary.BigEndian.Uint64(sum[:8])
}

// withoutFragment returns u without its #fragment: the document a GET
// fetches is the same whatever the fragment.
func withoutFragment(u string) string {
	if i := strings.IndexByte(u, '#'); i >= 0 {
		return u[:i]
	}
	return u
}

// shorten keeps messages about hostile URLs readable.
func shorten(u string) string { return shortenTo(u, 200) }

// shortenTo cuts s to its first max bytes (on a rune boundary) and says
// how long it was.
func shortenTo(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", s[:cut], len(s))
}
