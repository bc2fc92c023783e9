package boltstore

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// FuzzDecodeEntry: a damaged log entry gives an error, never a panic, and
// what decodes re-encodes to the same bytes.
func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeEntry(&hubstore.Entry{Published: time.Unix(1700000000, 5), ContentType: "application/xml",
		HubURL: "https://hub.example/", Links: []string{"<x>; rel=y"}, Body: []byte("<a/>")}))
	f.Add(encodeEntry(&hubstore.Entry{}))
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntry(7, b)
		if err != nil {
			return
		}
		if e.Seq != 7 {
			t.Fatalf("seq %d", e.Seq)
		}
		again := encodeEntry(&e)
		if !bytes.Equal(again, b) {
			e2, err := decodeEntry(7, again)
			if err != nil || e2.ContentType != e.ContentType || !slices.Equal(e2.Links, e.Links) || !bytes.Equal(e2.Body, e.Body) {
				t.Fatalf("round trip changed the entry: %v", err)
			}
		}
	})
}
