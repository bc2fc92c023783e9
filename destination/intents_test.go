package destination

import (
	"reflect"
	"testing"
	"time"
)

func TestIntentRoundTrip(t *testing.T) {
	at := time.Date(2026, 11, 29, 1, 2, 3, 456789, time.UTC)
	for _, in := range []intent{
		{},
		{uri: "http://example.org/a", set: "default"},
		{uri: "http://example.org/d/b.txt", set: "s", hashes: "md5:0123456789abcdef0123456789abcdef sha-256:xyz", length: 42, hasLength: true,
			lastMod: at, changed: at.Add(time.Second), priorOK: true, priorSize: 7, priorTime: at.UnixNano()},
		{uri: "http://example.org/e", hasLength: true, priorOK: true, priorSize: -1, priorTime: -5},
		{uri: "http://example.org/f", stamp: at.Truncate(2 * time.Second)},
	} {
		got, err := decodeIntent(encodeIntent(&in))
		if err != nil {
			t.Fatalf("%+v: %v", in, err)
		}
		if !reflect.DeepEqual(got, in) {
			t.Errorf("round trip: got %+v, want %+v", got, in)
		}
	}
	for _, bad := range [][]byte{nil, {intentV1}, {0x02, 0}, {intentV1, 0x80}, {intentV1, 0, 5, 'a'}, append(encodeIntent(&intent{uri: "u"}), 0)} {
		if _, err := decodeIntent(bad); err == nil {
			t.Errorf("%q decoded", bad)
		}
	}
}

// FuzzDecodeIntent: a damaged or hostile state never makes decoding
// panic, and what decodes encodes back to the same intent.
func FuzzDecodeIntent(f *testing.F) {
	f.Add(encodeIntent(&intent{uri: "http://example.org/a", set: "default", hashes: "sha-256:00", length: 3, hasLength: true,
		lastMod: time.Unix(1e9, 5).UTC(), priorOK: true, priorSize: 1, priorTime: 2}))
	f.Add([]byte{intentV1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := decodeIntent(b)
		if err != nil {
			return
		}
		again, err := decodeIntent(encodeIntent(&in))
		if err != nil || !reflect.DeepEqual(again, in) {
			t.Fatalf("%+v: re-encoded as %+v, %v", in, again, err)
		}
	})
}
