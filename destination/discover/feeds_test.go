package discover

import "testing"

func TestFeedKind(t *testing.T) {
	for doc, want := range map[string]string{
		`{"@context":"http://iiif.io/api/discovery/1/context.json","type":"OrderedCollection","last":{"id":"p"}}`: FeedIIIF,
		`{"type":"OrderedCollectionPage","orderedItems":[]}`:                                                      FeedIIIF,
		"@prefix ldes: <https://w3id.org/ldes#> .\n<s> a ldes:EventStream .":                                      FeedLDES,
		`<n> <https://w3id.org/tree#relation> _:r .`:                                                              FeedLDES,
		`<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"/>`:                      "",
		`<html><body>OrderedCollection</body></html>`:                                                             "",
		`{"type":"Manifest"}`: "",
	} {
		if got := FeedKind([]byte(doc)); got != want {
			t.Errorf("FeedKind(%s) = %q, want %q", doc, got, want)
		}
	}
}
