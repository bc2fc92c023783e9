package ldesgraph

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rdf"
)

// TestVersionRoundTrip: a spooled version reads back as written, terms
// of every kind, empty strings and non-ASCII included.
func TestVersionRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name    string
		deleted bool
		ts      []rdf.Triple
	}{
		{"deletion", true, nil},
		{"empty version", false, nil},
		{"terms of every kind", false, []rdf.Triple{
			{S: rdf.IRI("http://x/o"), P: rdf.IRI("http://purl.org/dc/terms/title"), O: rdf.Term{Kind: rdf.KindLiteral, Value: "tître\n\"q\"", Lang: "fr"}},
			{S: rdf.IRI("http://x/o"), P: rdf.IRI("http://purl.org/dc/terms/creator"), O: rdf.Term{Kind: rdf.KindBlank, Value: "b0"}},
			{S: rdf.Term{Kind: rdf.KindBlank, Value: "b0"}, P: rdf.IRI("http://x/n"), O: rdf.Term{Kind: rdf.KindLiteral, Value: "", Datatype: rdf.XSDString}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := encodeVersion([]byte("junk before"), tc.deleted, tc.ts)[len("junk before"):]
			deleted, ts, err := decodeVersion(b)
			if err != nil || deleted != tc.deleted || !slices.Equal(ts, tc.ts) {
				t.Fatalf("got %v %v %v, want %v %v", deleted, ts, err, tc.deleted, tc.ts)
			}
			for i := range len(b) - 1 { // cut short: an error, never a panic
				if _, _, err := decodeVersion(b[:i]); err == nil {
					t.Fatalf("cut at %d of %d: no error", i, len(b))
				}
			}
		})
	}
}

// TestRankOrder: a newer time ranks first, to the nanosecond, before
// 1970 too.
func TestRankOrder(t *testing.T) {
	times := []time.Time{
		time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Unix(0, 0),
		time.Unix(0, 1),
		time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2024, 1, 1, 0, 0, 0, 1, time.UTC),
	}
	for i := 1; i < len(times); i++ {
		if bytes.Compare(rankOf(times[i]), rankOf(times[i-1])) >= 0 {
			t.Errorf("%s does not rank before %s", times[i], times[i-1])
		}
	}
}

// FuzzDecodeVersion: whatever the bytes, decodeVersion returns an error
// or a version that encodes to bytes decoding as the same (a length may
// be written in more bytes than needed).
func FuzzDecodeVersion(f *testing.F) {
	f.Add(encodeVersion(nil, false, []rdf.Triple{{S: rdf.IRI("http://x/o"), P: rdf.IRI("http://x/p"), O: rdf.Term{Kind: rdf.KindLiteral, Value: "v", Lang: "en"}}}))
	f.Add(encodeVersion(nil, true, nil))
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		deleted, ts, err := decodeVersion(b)
		if err != nil {
			return
		}
		again := encodeVersion(nil, deleted, ts)
		d2, ts2, err := decodeVersion(again)
		if err != nil || d2 != deleted || !slices.Equal(ts2, ts) {
			t.Fatalf("decoded %v %v from %x; its encoding %x decodes as %v %v %v", deleted, ts, b, again, d2, ts2, err)
		}
	})
}
