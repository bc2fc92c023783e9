package validate

import (
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
)

// TestContinuitySkipsUnvisited: a change document another parent visited
// first (its summary is nil here) is not taken as a gap between its
// neighbours; a real gap between two visited neighbours still is.
func TestContinuitySkipsUnvisited(t *testing.T) {
	at := func(h int) rs.Time { return rs.NewTime(time.Date(2026, 3, 1, h, 0, 0, 0, time.UTC)) }
	list := func(from, until int) *docSum {
		return &docSum{url: "u", head: rs.Head{MD: rs.Metadata{Capability: rs.CapChangeList, From: at(from), Until: at(until)}}}
	}
	for _, tc := range []struct {
		name string
		sums []*docSum
		want int
	}{
		{"unvisited middle", []*docSum{list(10, 11), nil, list(12, 13)}, 0},
		{"contiguous", []*docSum{list(10, 11), list(11, 12)}, 0},
		{"gap", []*docSum{list(10, 11), list(12, 13)}, 1},
	} {
		var got int
		w := &walker{sum: &WalkSummary{}, out: func(p Problem) {
			if p.Rule == "RS-DEST-3" {
				got++
			}
		}}
		p := &parent{url: "index", index: true, head: &rs.Head{Root: rs.SitemapIndex, MD: rs.Metadata{Capability: rs.CapChangeList}}}
		w.continuity(p, nil, tc.sums)
		if got != tc.want {
			t.Errorf("%s: %d RS-DEST-3, want %d", tc.name, got, tc.want)
		}
	}
}
