package iiif

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/feed/activity"
)

// Kinds of document.
const (
	KindCollection = "OrderedCollection"
	KindPage       = "OrderedCollectionPage"
)

// MaxItems bounds the activities of one page: the specification leaves
// the page size to the publisher, and a page is held in memory while it
// is walked newest first, so a hostile page must not grow without end.
const MaxItems = 100000

// ErrNotFeed is returned for a JSON document that is neither an
// OrderedCollection nor an OrderedCollectionPage.
var ErrNotFeed = errors.New("not an IIIF Change Discovery collection or page")

// Item is one activity as the consumer needs it. It is activity.Activity
// plus the two properties the consuming algorithm reads that the shared
// shape does not carry: startTime (where a Refresh puts its time, §2.1.5)
// and origin (a Remove's stream, §3.5.2).
type Item struct {
	ID        string        `json:"id,omitempty"`
	Type      string        `json:"type"`
	Object    *activity.Ref `json:"object,omitempty"`
	Target    *activity.Ref `json:"target,omitempty"`
	Origin    *activity.Ref `json:"origin,omitempty"`
	EndTime   time.Time     `json:"endTime,omitzero"`
	StartTime time.Time     `json:"startTime,omitzero"`
}

// Time is when the activity happened: its endTime, else its startTime
// (a Refresh), else the zero time (a Level 0 stream).
func (it *Item) Time() time.Time {
	if !it.EndTime.IsZero() {
		return it.EndTime
	}
	return it.StartTime
}

// Doc is a decoded collection or page. Kind tells which fields apply.
type Doc struct {
	Kind       string
	ID         string
	TotalItems int64
	// First and Last are a collection's pages.
	First, Last string
	// PartOf, Prev and Next are a page's links; Items its activities,
	// oldest first.
	PartOf, Prev, Next string
	Items              []Item
}

// raw is the union of both documents' properties. Links are decoded
// loosely: a string or an object with an id, as JSON-LD allows.
type raw struct {
	ID         string          `json:"id"`
	Type       json.RawMessage `json:"type"`
	TotalItems int64           `json:"totalItems"`
	First      link            `json:"first"`
	Last       link            `json:"last"`
	PartOf     link            `json:"partOf"`
	Prev       link            `json:"prev"`
	Next       link            `json:"next"`
}

// link is the id of a reference given as {"id": ...}, "..." or an array
// of either (partOf of a collection is an array in the specification).
type link string

func (l *link) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*l = link(s)
		return nil
	}
	var r struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(b, &r) == nil {
		*l = link(r.ID)
		return nil
	}
	var rs []link
	if err := json.Unmarshal(b, &rs); err != nil {
		return fmt.Errorf("a link must be a string, an object with an id, or an array of them")
	}
	if len(rs) > 0 {
		*l = rs[0]
	}
	return nil
}

// Decode reads one document. url names it in errors.
func Decode(r io.Reader, url string) (*Doc, error) {
	dec := json.NewDecoder(r)
	var w struct {
		raw
		Items []json.RawMessage `json:"orderedItems"`
	}
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("%s: malformed JSON: %w", url, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: malformed JSON: data after the document", url)
	}
	typ := typeOf(w.Type)
	d := &Doc{Kind: typ, ID: w.ID, TotalItems: w.TotalItems, First: string(w.First), Last: string(w.Last),
		PartOf: string(w.PartOf), Prev: string(w.Prev), Next: string(w.Next)}
	switch typ {
	case KindCollection:
		if d.Last == "" {
			return nil, fmt.Errorf("%s: an OrderedCollection without last", url)
		}
		return d, nil
	case KindPage:
	default:
		return nil, fmt.Errorf("%s: %w (type %q)", url, ErrNotFeed, typ)
	}
	if len(w.Items) > MaxItems {
		return nil, fmt.Errorf("%s: %d activities in one page, more than %d", url, len(w.Items), MaxItems)
	}
	d.Items = make([]Item, 0, len(w.Items))
	for i, m := range w.Items {
		var it Item
		if err := json.Unmarshal(m, &it); err != nil {
			return nil, fmt.Errorf("%s: activity %d: %w", url, i, err)
		}
		d.Items = append(d.Items, it)
	}
	return d, nil
}

// typeOf reads "type" given as a string or an array of strings (JSON-LD),
// keeping the first it knows.
func typeOf(b json.RawMessage) string {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return s
	}
	var ss []string
	if json.Unmarshal(b, &ss) == nil {
		for _, t := range ss {
			if t == KindCollection || t == KindPage {
				return t
			}
		}
	}
	return ""
}

// Sniff reports whether head, the start of a document, looks like an IIIF
// Change Discovery collection or page: a JSON object naming one of the two
// types. It reads only the bytes given; Decode decides.
func Sniff(head []byte) bool {
	s := strings.TrimLeft(string(head), "\xef\xbb\xbf \t\r\n")
	if !strings.HasPrefix(s, "{") {
		return false
	}
	return strings.Contains(s, `"`+KindCollection+`"`) || strings.Contains(s, `"`+KindPage+`"`)
}
