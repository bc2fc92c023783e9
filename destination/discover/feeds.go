package discover

import (
	"context"
	"io"
	"net/http"

	"github.com/resourcesync-go/resourcesync/destination/feedsync/iiif"
	"github.com/resourcesync-go/resourcesync/destination/feedsync/ldes"
	"github.com/resourcesync-go/resourcesync/internal/redact"
)

// feedHead is how much of a document is read to recognise a feed
// (FeedHead for callers of FeedKind).
const feedHead = 8 << 10

// FeedHead is how many of a document's first bytes FeedKind needs.
const FeedHead = feedHead

// feedKind tells which change feed b is (a FeedKind), "" when none: the
// one place where a document that is not ResourceSync is recognised as a
// feed, from its first bytes (the parsers decide the rest).
func feedKind(b *body) string {
	h, err := b.head(feedHead)
	if err != nil {
		return ""
	}
	return FeedKind(h)
}

// FeedKind tells which change feed a document whose first bytes are head
// is (a Set.FeedKind), "" when none: the one place where a feed is
// recognised (Discover, and sdshare sync for an LDES).
func FeedKind(head []byte) string {
	h := head
	if iiif.Sniff(h) {
		return FeedIIIF
	}
	if ldes.Sniff(h) {
		return FeedLDES
	}
	return ""
}

// Raw is one downloaded document that is not ResourceSync (a feed's
// page): its body spooled, as Open spools a ResourceSync document.
type Raw struct {
	Requested, URL string
	Header         http.Header
	io.Reader
	b *body
}

// Close removes the spooled copy.
func (r *Raw) Close() error { return r.b.close() }

// Get downloads u as Open does (retries, size limit, origin policy,
// spooling) without decoding it.
func (g *Getter) Get(ctx context.Context, u string) (*Raw, error) {
	b, err := g.get(ctx, u, g.maxBytes(), false)
	if err != nil {
		return nil, redact.Error(err)
	}
	if _, err := b.f.Seek(0, io.SeekStart); err != nil {
		b.close()
		return nil, err
	}
	return &Raw{Requested: u, URL: b.url, Header: b.header, Reader: b.f, b: b}, nil
}
