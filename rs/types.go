package rs

import "strings"

// Namespaces used by ResourceSync documents. Elements are matched on the
// namespace URI, never on the prefix.
const (
	SitemapNS = "http://www.sitemaps.org/schemas/sitemap/0.9"
	RSNS      = "http://www.openarchives.org/rs/terms/"
	XHTMLNS   = "http://www.w3.org/1999/xhtml"
)

// MaxEntries is the largest number of items the specification allows in
// one document (§7, following sitemaps.org).
const MaxEntries = 50000

// MaxDocumentBytes is the largest size the specification allows for one
// document: §7 follows sitemaps.org, whose 50 MB are 52,428,800 bytes.
const MaxDocumentBytes = 50 << 20

// Capability is the value of rs:md/@capability.
type Capability string

// Capability values defined by the core specification and its companions.
const (
	CapDescription           Capability = "description"
	CapCapabilityList        Capability = "capabilitylist"
	CapResourceList          Capability = "resourcelist"
	CapResourceDump          Capability = "resourcedump"
	CapResourceDumpManifest  Capability = "resourcedump-manifest"
	CapChangeList            Capability = "changelist"
	CapChangeDump            Capability = "changedump"
	CapChangeDumpManifest    Capability = "changedump-manifest"
	CapResourceListArchive   Capability = "resourcelist-archive"
	CapResourceDumpArchive   Capability = "resourcedump-archive"
	CapChangeListArchive     Capability = "changelist-archive"
	CapChangeDumpArchive     Capability = "changedump-archive"
	CapChangeNotification    Capability = "change-notification"
	CapFrameworkNotification Capability = "framework-notification"
)

// Known reports whether c is one of the capability values defined by the
// ResourceSync specifications.
func (c Capability) Known() bool {
	switch c {
	case CapDescription, CapCapabilityList, CapResourceList, CapResourceDump,
		CapResourceDumpManifest, CapChangeList, CapChangeDump, CapChangeDumpManifest,
		CapResourceListArchive, CapResourceDumpArchive, CapChangeListArchive,
		CapChangeDumpArchive, CapChangeNotification, CapFrameworkNotification:
		return true
	}
	return false
}

// IsSnapshot reports whether documents of this capability describe a state
// at a point in time and so carry at/completed.
func (c Capability) IsSnapshot() bool {
	return c == CapResourceList || c == CapResourceDump || c == CapResourceDumpManifest
}

// IsChange reports whether documents of this capability describe changes
// over an interval and so carry from/until.
func (c Capability) IsChange() bool {
	switch c {
	case CapChangeList, CapChangeDump, CapChangeDumpManifest, CapChangeNotification, CapFrameworkNotification:
		return true
	}
	return false
}

// IsArchive reports whether c is one of the four archive capabilities.
func (c Capability) IsArchive() bool {
	return strings.HasSuffix(string(c), "-archive")
}

// IsManifest reports whether c is a dump manifest capability.
func (c Capability) IsManifest() bool {
	return c == CapResourceDumpManifest || c == CapChangeDumpManifest
}

// Change is the value of rs:md/@change.
type Change string

// Change values (RS-URL-3).
const (
	Created Change = "created"
	Updated Change = "updated"
	Deleted Change = "deleted"
)

// Valid reports whether c is one of created, updated, deleted.
func (c Change) Valid() bool { return c == Created || c == Updated || c == Deleted }

// RootKind tells an index from a list. The root element alone decides.
type RootKind uint8

const (
	URLSet       RootKind = iota // <urlset>: a list of <url> items
	SitemapIndex                 // <sitemapindex>: a list of <sitemap> items
)

// String returns the element name.
func (k RootKind) String() string {
	if k == SitemapIndex {
		return "sitemapindex"
	}
	return "urlset"
}

// ItemName returns the element name of this root's items.
func (k RootKind) ItemName() string {
	if k == SitemapIndex {
		return "sitemap"
	}
	return "url"
}

// Attr is an attribute kept as it was read: an extension attribute of
// rs:md or rs:ln in a namespace other than ResourceSync's.
type Attr struct {
	Space string // namespace URI; empty for an unprefixed attribute
	Local string
	Value string
}

// Metadata is an rs:md element, at the root or in an item. Zero-valued
// fields were absent.
type Metadata struct {
	Capability Capability
	Change     Change
	At         Time
	Completed  Time
	From       Time
	Until      Time
	DateTime   Time
	Modified   Time // allowed by the 1.1 XSD; also where v0.5 put the snapshot time
	Hashes     Hashes
	Length     int64 // meaningful only when HasLength
	HasLength  bool
	Type       string
	Encoding   string
	Path       string
	Extra      []Attr
}

// Link is an rs:ln element, at the root or in an item.
type Link struct {
	Rel       string
	Href      string
	Type      string
	Hashes    Hashes
	Length    int64 // meaningful only when HasLength
	HasLength bool
	Modified  Time
	Path      string
	Encoding  string
	Pri       int // 0 when absent; 1..999999 otherwise
	Profile   string
	Extra     []Attr
}

// Link relation types used by the framework (RS-REL).
const (
	RelUp           = "up"
	RelIndex        = "index"
	RelDescribedBy  = "describedby"
	RelDescribes    = "describes"
	RelContents     = "contents"
	RelDuplicate    = "duplicate"
	RelAlternate    = "alternate"
	RelCanonical    = "canonical"
	RelPatch        = "http://www.openarchives.org/rs/terms/patch"
	RelMemento      = "memento"
	RelTimegate     = "timegate"
	RelTimemap      = "timemap"
	RelCollection   = "collection"
	RelVia          = "via"
	RelProfile      = "profile"
	RelArchives     = "archives"
	RelHub          = "hub"
	RelResourceSync = "resourcesync"
	RelSelf         = "self"
)

// Head is everything of a document that is not an item: the root element,
// the root rs:md and the root rs:ln elements.
type Head struct {
	Root  RootKind
	MD    Metadata
	Links []Link
}

// Capability returns the document's capability.
func (h *Head) Capability() Capability { return h.MD.Capability }

// IsIndex reports whether the document is a <sitemapindex>.
func (h *Head) IsIndex() bool { return h.Root == SitemapIndex }

// Link returns the href of the first root link with the given rel, or "".
func (h *Head) Link(rel string) string { return findLink(h.Links, rel) }

// Entry is one item of a document: a <url> or a <sitemap>.
type Entry struct {
	Loc        string
	LastMod    Time
	ChangeFreq string
	Priority   string
	MD         Metadata
	Links      []Link
}

// Link returns the href of the first link with the given rel, or "".
func (e *Entry) Link(rel string) string { return findLink(e.Links, rel) }

// EventTime is the time of the change an entry records: rs:md/@datetime,
// else (1.0 documents) lastmod. It is the zero Time when neither is given.
func (e *Entry) EventTime() Time {
	if !e.MD.DateTime.IsZero() {
		return e.MD.DateTime
	}
	return e.LastMod
}

func findLink(ls []Link, rel string) string {
	for i := range ls {
		if ls[i].Rel == rel {
			return ls[i].Href
		}
	}
	return ""
}
