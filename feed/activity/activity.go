package activity

import (
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

// Media types and contexts of the feeds.
const (
	// MediaType is what IIIF Change Discovery 1.0 and Activity Streams
	// documents are served as.
	MediaType = `application/ld+json;profile="` + Profile + `"`
	// Profile is MediaType's profile: where a bare media type is wanted
	// (a ResourceSync rs:ln, whose type the schema allows no parameters
	// in), it goes in a profile attribute of its own.
	Profile = "https://www.w3.org/ns/activitystreams"
	// DiscoveryContext is the JSON-LD context of IIIF Change Discovery 1.0.
	DiscoveryContext = "http://iiif.io/api/discovery/1/context.json"
	// StreamsContext is the Activity Streams 2.0 context.
	StreamsContext = "https://www.w3.org/ns/activitystreams"
)

// Activity types of IIIF Change Discovery 1.0 (section 2.3).
const (
	Create  = "Create"
	Update  = "Update"
	Delete  = "Delete"
	Move    = "Move"
	Add     = "Add"
	Remove  = "Remove"
	Refresh = "Refresh"
)

// Ref is an id with a type, the shape of every link in the documents
// (first, last, next, prev, partOf, object, target).
type Ref struct {
	ID   string `json:"id"`
	Type string `json:"type,omitempty"`
	// SeeAlso and the digests are optional extensions a consumer may use
	// when present (LDES members carry them; Change Discovery consumers
	// ignore them). Format, Size and Digest describe the object's bytes
	// after the change.
	Format string `json:"format,omitempty"`
	Size   *int64 `json:"size,omitempty"`
	// Digest uses the ResourceSync spelling ("md5:… sha-256:…") so one
	// parser reads both feeds' hashes.
	Digest string `json:"digest,omitempty"`
}

// Activity is one change: a Create, Update, Delete, Move (with Target),
// or a Refresh (no Object).
type Activity struct {
	Context any       `json:"@context,omitempty"`
	ID      string    `json:"id,omitempty"`
	Type    string    `json:"type"`
	Object  *Ref      `json:"object,omitempty"`
	Target  *Ref      `json:"target,omitempty"`
	EndTime time.Time `json:"endTime"`
}

// Collection is the OrderedCollection at the root of a Change Discovery
// stream.
type Collection struct {
	Context    any    `json:"@context,omitempty"`
	ID         string `json:"id"`
	Type       string `json:"type"` // "OrderedCollection"
	TotalItems int64  `json:"totalItems,omitempty"`
	First      *Ref   `json:"first,omitempty"`
	Last       *Ref   `json:"last"`
}

// Page is an OrderedCollectionPage: its items oldest first.
type Page struct {
	Context      any        `json:"@context,omitempty"`
	ID           string     `json:"id"`
	Type         string     `json:"type"` // "OrderedCollectionPage"
	PartOf       *Ref       `json:"partOf,omitempty"`
	StartIndex   int64      `json:"startIndex,omitempty"`
	Prev         *Ref       `json:"prev,omitempty"`
	Next         *Ref       `json:"next,omitempty"`
	OrderedItems []Activity `json:"orderedItems"`
}

// FromChange maps a ResourceSync change kind to its activity type.
func FromChange(c rs.Change) string {
	switch c {
	case rs.Created:
		return Create
	case rs.Deleted:
		return Delete
	default:
		return Update
	}
}

// ToChange maps an activity type to a ResourceSync change kind; ok is
// false for types that do not change one object's bytes (Refresh, Add,
// Remove) and for unknown types, which a consumer skips.
func ToChange(typ string) (rs.Change, bool) {
	switch typ {
	case Create:
		return rs.Created, true
	case Update:
		return rs.Updated, true
	case Delete:
		return rs.Deleted, true
	}
	return "", false
}
