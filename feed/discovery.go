package feed

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/resourcesync-go/resourcesync/feed/activity"
)

// CollectionURL is the URL of the Change Discovery OrderedCollection.
func (s *Stream) CollectionURL() string { return s.BaseURL + CollectionFile }

func (s *Stream) pageRef(n int64) *activity.Ref {
	return &activity.Ref{ID: s.BaseURL + PageFile(n), Type: "OrderedCollectionPage"}
}

// WriteCollection writes the Change Discovery OrderedCollection of the
// stream whose journal's last seq is last: totalItems, first and last.
func (s *Stream) WriteCollection(w io.Writer, last uint64) error {
	c := activity.Collection{Context: activity.DiscoveryContext, ID: s.CollectionURL(), Type: "OrderedCollection",
		TotalItems: s.Total(last), First: s.pageRef(0), Last: s.pageRef(s.Pages(last) - 1)}
	return encodeJSON(w, c)
}

// WritePage writes Change Discovery page n, whose items (oldest first)
// are given, of the stream whose journal's last seq is last. A page that
// is not the last has a next link. The JSON is the encoding of an activity.Page, written by hand:
// it is the feeds' hot path (see bench/feedbench).
func (s *Stream) WritePage(w io.Writer, n int64, items []Item, last uint64) error {
	b := make([]byte, 0, 64<<10)
	b = append(b, `{"@context":`...)
	b = appendString(b, activity.DiscoveryContext)
	b = append(b, `,"id":`...)
	b = appendString(b, s.BaseURL+PageFile(n))
	b = append(b, `,"type":"OrderedCollectionPage","partOf":{"id":`...)
	b = appendString(b, s.CollectionURL())
	b = append(b, `,"type":"OrderedCollection"}`...)
	if si := s.startIndex(n); si != 0 {
		b = append(b, `,"startIndex":`...)
		b = strconv.AppendInt(b, si, 10)
	}
	ref := func(b []byte, key string, m int64) []byte {
		b = append(b, `,"`+key+`":{"id":`...)
		b = appendString(b, s.BaseURL+PageFile(m))
		return append(b, `,"type":"OrderedCollectionPage"}`...)
	}
	if n > 0 {
		b = ref(b, "prev", n-1)
	}
	if n < s.Pages(last)-1 {
		b = ref(b, "next", n+1)
	}
	b = append(b, `,"orderedItems":[`...)
	for i := range items {
		it := &items[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":`...)
		b = appendString(b, it.Type)
		if it.Object != "" {
			b = append(b, `,"object":{"id":`...)
			b = appendString(b, it.Object)
			b = append(b, `,"type":`...)
			b = appendString(b, ObjectType(it.MediaType))
			if it.hasBytes() {
				b = append(b, `,"digest":`...)
				b = appendString(b, it.digest())
			}
			b = append(b, '}')
		}
		b = append(b, `,"endTime":"`...)
		b = it.Time.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, `"}`...)
		if len(b) > 48<<10 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	b = append(b, "]}\n"...)
	_, err := w.Write(b)
	return err
}

// appendString appends s as a JSON string, as encoding/json does without
// HTML escaping (invalid UTF-8 becomes U+FFFD).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigit[c>>4], hexDigit[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigit[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

const hexDigit = "0123456789abcdef"

// ErrNotOurs is returned by AddNext for a document this package did not
// write.
var ErrNotOurs = errors.New("feed: not a page of this package")

// AddNext returns page n's Change Discovery JSON and LDES Turtle (as
// WritePage and WriteNode wrote them while n was the last page) with
// their links to page n+1, whose items are not earlier than from. The
// bytes are those WritePage and WriteNode give once page n+1 exists.
func (s *Stream) AddNext(page, node []byte, n int64, from time.Time) ([]byte, []byte, error) {
	// A JSON string never holds `,"orderedItems":[` (its quote would be
	// escaped), so the first one is the key's.
	key := []byte(`,"orderedItems":[`)
	i := bytes.Index(page, key)
	if i < 0 || bytes.Contains(page[:i], []byte(`"next":`)) {
		return nil, nil, ErrNotOurs
	}
	next := []byte(`,"next":{"id":`)
	next = appendString(next, s.BaseURL+PageFile(n+1))
	next = append(next, `,"type":"OrderedCollectionPage"}`...)
	p := append(append(append([]byte(nil), page[:i]...), next...), page[i:]...)
	mark := []byte("\n<> a tree:Node .\n")
	j := bytes.Index(node, mark)
	if j < 0 {
		return nil, nil, ErrNotOurs
	}
	var rel bytes.Buffer
	w := bufio.NewWriter(&rel)
	w.WriteString("\n<> a tree:Node")
	writeRelation(w, s.NodeURL(n+1), from)
	w.WriteString(" .\n")
	w.Flush()
	nd := append(append(append([]byte(nil), node[:j]...), rel.Bytes()...), node[j+len(mark):]...)
	return p, nd, nil
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
