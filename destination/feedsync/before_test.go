package feedsync

import (
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/destination/feedsync/ldes"
)

// TestBefore: a relation is passed over only when its node holds nothing
// at or after since: a LessThanOrEqualTo relation whose value is since may
// lead to members dated since, which a walk reads again.
func TestBefore(t *testing.T) {
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const ts = "https://www.w3.org/ns/activitystreams#published"
	for _, tc := range []struct {
		typ, value string
		want       bool
	}{
		{"LessThanRelation", "2026-01-01T00:00:00Z", true},
		{"LessThanRelation", "2026-01-01T00:00:01Z", false},
		{"LessThanOrEqualToRelation", "2026-01-01T00:00:00Z", false},
		{"LessThanOrEqualToRelation", "2025-12-31T23:59:59Z", true},
		{"GreaterThanOrEqualToRelation", "2020-01-01T00:00:00Z", false},
		{"LessThanRelation", "not a time", false},
	} {
		r := ldes.Relation{Type: ldes.TreeNS + tc.typ, Path: ts, Value: tc.value, Node: "https://e.org/n"}
		if got := before(r, ts, since); got != tc.want {
			t.Errorf("%s %s: before = %v, want %v", tc.typ, tc.value, got, tc.want)
		}
	}
}
