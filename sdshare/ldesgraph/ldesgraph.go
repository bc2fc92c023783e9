package ldesgraph

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/resourcesync-go/resourcesync/destination/feedsync"
	"github.com/resourcesync-go/resourcesync/internal/extsort"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// Position is where a run stopped: the next run's start.
type Position struct {
	Until  time.Time `json:"until,omitzero"`
	Resume []string  `json:"resume,omitempty"`
	// AtUntil are the members dated Until that were applied: the walk
	// reads the members of that instant again (one published later in
	// the same second would be lost otherwise), and these are passed
	// over. nil (more than maxAtUntil) applies them all again.
	AtUntil []string `json:"at_until,omitempty"`
}

// Report tells what a run did.
type Report struct {
	Replaced, Dropped, Skipped int
	Position                   Position
}

// Apply reads the LDES at stream from pos and brings store up to date.
// Errors name the document or the graph.
func Apply(ctx context.Context, store graphstore.Store, get feedsync.Getter, stream string, pos Position, opt feedsync.Options) (Report, error) {
	opt.Since, opt.Resume = pos.Until, pos.Resume
	if pos.Until.IsZero() {
		opt.Resume = nil
	}
	// Collected first: the walk's pages are read before any graph is
	// written, so that a member superseded later in the stream is never
	// written at all, and writes do not hold a page open. The versions
	// are spooled to files (see spool.go), the newest of each object
	// kept, and read back in the objects' order.
	sp := extsort.Sorter{Pattern: "ldesgraph-*", Dedupe: true}
	defer sp.Close()
	done := map[string]bool{}
	for _, id := range pos.AtUntil {
		done[id] = true
	}
	newest, atNewest := pos.Until, slices.Clone(pos.AtUntil)
	var buf []byte
	res, err := feedsync.WalkLDES(ctx, get, stream, opt, func(c feedsync.Change) error {
		switch {
		case c.Time.After(newest):
			newest, atNewest = c.Time, []string{c.Member}
		case c.Time.Equal(newest) && !newest.IsZero() && atNewest != nil && !done[c.Member]:
			if atNewest = append(atNewest, c.Member); len(atNewest) > maxAtUntil {
				atNewest = nil
			}
		}
		if !pos.Until.IsZero() && c.Time.Equal(pos.Until) && done[c.Member] {
			return nil // applied by the run that reached pos.Until
		}
		buf = encodeVersion(buf[:0], c.Change == rs.Deleted, c.Triples)
		if err := sp.Add([]byte(c.URI), rankOf(c.Time), buf); err != nil {
			return fmt.Errorf("spooling the member %s: %w", c.Member, err)
		}
		return nil
	})
	var rep Report
	if err != nil {
		return rep, err
	}
	err = sp.Each(func(gb, _, v []byte) error {
		g := string(gb)
		deleted, ts, err := decodeVersion(v)
		if err != nil {
			return fmt.Errorf("graph %s: %w", g, err)
		}
		if err := graphstore.CheckGraph(g); err != nil {
			rep.Skipped++
			return nil
		}
		if deleted {
			ts = nil
		}
		err = store.ReplaceGraph(ctx, g, func(yield func(rdf.Triple, error) bool) {
			for _, t := range ts {
				if !yield(t, nil) {
					return
				}
			}
		})
		if err != nil {
			return fmt.Errorf("graph %s: %w", g, err)
		}
		if deleted {
			rep.Dropped++
		} else {
			rep.Replaced++
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	rep.Position = Position{Until: res.Until, Resume: res.Frontier}
	if res.Until.Equal(newest) {
		rep.Position.AtUntil = atNewest
	}
	return rep, nil
}

// maxAtUntil bounds Position.AtUntil: a stream dating more members alike
// has them applied again (correct, only slower).
const maxAtUntil = 1000
