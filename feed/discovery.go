package feed

import (
	"encoding/json"
	"io"

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
// is not the last has a next link; since the page after a full page
// always exists (the last page may be empty), a full page's bytes never
// change.
func (s *Stream) WritePage(w io.Writer, n int64, items []Item, last uint64) error {
	p := activity.Page{Context: activity.DiscoveryContext, ID: s.BaseURL + PageFile(n), Type: "OrderedCollectionPage",
		PartOf:     &activity.Ref{ID: s.CollectionURL(), Type: "OrderedCollection"},
		StartIndex: s.startIndex(n), OrderedItems: make([]activity.Activity, len(items))}
	if n > 0 {
		p.Prev = s.pageRef(n - 1)
	}
	if n < s.Pages(last)-1 {
		p.Next = s.pageRef(n + 1)
	}
	for i := range items {
		p.OrderedItems[i] = s.activityOf(&items[i], n)
	}
	return encodeJSON(w, p)
}

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	return enc.Encode(v)
}
