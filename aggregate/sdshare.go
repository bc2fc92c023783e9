package aggregate

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/client"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// ModeSDShare is the Mode of an SDShare run.
const ModeSDShare = "sdshare"

// errNoGraphStore: an SDShare Source without a graph store to merge into.
var errNoGraphStore = errors.New("an SDShare Source needs a graph store (--graph-store or --sparql-update)")

// syncSDShare runs the SDShare client once over src (src.URL is the
// server's overview feed) into store, keeping the client's state in dest
// (client.StateFile; dest is created if missing). Each collection goes to
// its own named graph, the client's default: the collection feed's URL,
// unique per Source and collection (two Sources naming one server would
// share its graphs, as they would share its data). src.Sets, if any,
// limits the run to the collections of those titles or collection feed
// URLs; src.AllowHosts and src.Timeout are the client's AllowHosts and
// StallTimeout.
//
// The result counts documents applied to the store: Fetched the
// snapshots loaded plus the fragments applied that left the resource
// with statements, Deleted the fragments that deleted their resource
// (empty fragments), Failed the client's failures (entries and whole
// collections). Err is the error that ended the run, else the first
// collection's error, else the first failed entry's (with the number of
// failures); Reason is its class (classify), ReasonFailures for failed
// entries whose error has no more specific class.
//
// emit receives the client's progress as Destination events, Set the
// collection (title, or collection feed URL): discovered → plan,
// snapshot → fetched (URI the collection feed, Total the triples), page
// → phase, fragment-failed and failed → failed, future-updated →
// warning, done → done.
func syncSDShare(ctx context.Context, src Source, dest string, store graphstore.Store, hc *http.Client, emit func(destination.Event)) result {
	res := result{Mode: ModeSDShare}
	fail := func(reason string, err error) result {
		res.Err, res.Reason = err, reason
		return res
	}
	if store == nil {
		return fail(ReasonConfig, errNoGraphStore)
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return fail(ReasonState, fmt.Errorf("sdshare state: %w", err))
	}
	st, err := client.OpenState(dest)
	if err != nil {
		if r := classify(err); r == ReasonLocked {
			return fail(r, err)
		}
		return fail(ReasonState, err)
	}
	defer st.Close()
	if emit == nil {
		emit = func(destination.Event) {}
	}
	cfg := client.Config{
		Overview:     src.URL,
		Store:        taggedStore{store},
		State:        st,
		HTTPClient:   hc,
		StallTimeout: src.Timeout,
		AllowHosts:   src.AllowHosts,
		Events:       func(e client.Event) { emit(sdshareEvent(e)) },
		UserAgent:    "resourcesync-aggregate",
	}
	if len(src.Sets) > 0 {
		cfg.Only = func(c client.Collection) bool {
			return slices.Contains(src.Sets, c.Title) || slices.Contains(src.Sets, c.CollectionFeed)
		}
	}
	rep, err := client.Sync(ctx, cfg)
	var first error // the first collection's error, else the first entry's
	if rep != nil {
		for _, cr := range rep.Collections {
			if cr.Graph != "" {
				res.Graphs = append(res.Graphs, cr.Graph)
			}
			if cr.SnapshotLoaded {
				res.Fetched++
			}
			res.Fetched += cr.Applied - cr.Deleted
			res.Deleted += cr.Deleted
			if cr.Cause != nil && first == nil {
				first = fmt.Errorf("collection %s: %w", cr.Collection.CollectionFeed, cr.Cause)
			}
		}
		if first == nil {
			for _, cr := range rep.Collections {
				if len(cr.Failures) > 0 && cr.Failures[0].Cause != nil {
					first = fmt.Errorf("collection %s: %s: %w", cr.Collection.CollectionFeed, cr.Failures[0].URL, cr.Failures[0].Cause)
					break
				}
			}
		}
		res.Failed = rep.Failed()
	}
	switch {
	case err != nil:
		return fail(classify(err), err)
	case res.Failed > 0:
		if first == nil {
			first = errors.New("failures not kept in the report")
		}
		reason := classify(first)
		if reason == ReasonError {
			reason = ReasonFailures
		}
		return fail(reason, fmt.Errorf("%d failures; the first: %w", res.Failed, first))
	}
	return res
}

// sdshareEvent maps a client event to a Destination event.
func sdshareEvent(e client.Event) destination.Event {
	d := destination.Event{Time: time.Now(), Set: e.Collection, Mode: ModeSDShare, URI: e.URL, Error: e.Err, DateTime: e.T}
	switch e.Kind {
	case "discovered":
		d.Kind, d.Total = destination.EventPlan, -1
	case "snapshot":
		d.Kind, d.Total, d.Message = destination.EventFetched, e.Triples, fmt.Sprintf("snapshot: %d triples", e.Triples)
	case "page":
		d.Kind, d.Message = destination.EventPhase, fmt.Sprintf("fragments feed page: %d entries", e.Fragments)
	case "fragment-failed", "failed":
		d.Kind = destination.EventFailed
	case "future-updated":
		d.Kind, d.Message = destination.EventWarning, e.Err
		d.Error = ""
	case "done":
		d.Kind, d.Message = destination.EventDone, fmt.Sprintf("%d fragments applied", e.Fragments)
	default:
		d.Kind = destination.EventPhase
		d.Message = e.Kind
	}
	return d
}

// errGraphStore marks the errors of the graph store (see taggedStore).
var errGraphStore = errors.New("graph store")

// taggedStore marks the errors of its writes with errGraphStore, so that
// a graph store that is down or failing is not taken for the Source's
// fault (a SPARQL endpoint refusing connections is not an unreachable
// Source). ReplaceGraph also returns the snapshot's own errors (the
// Source's), which stay unmarked, as do cancellations.
type taggedStore struct{ graphstore.Store }

func (s taggedStore) ReplaceGraph(ctx context.Context, g string, ts iter.Seq2[rdf.Triple, error]) error {
	var srcErr error
	err := s.Store.ReplaceGraph(ctx, g, func(yield func(rdf.Triple, error) bool) {
		for t, err := range ts {
			if err != nil {
				srcErr = err
			}
			if !yield(t, err) {
				return
			}
		}
	})
	if srcErr != nil && errors.Is(err, srcErr) {
		return err
	}
	return tagStore(ctx, err)
}

func (s taggedStore) ApplyFragment(ctx context.Context, g string, r rdf.Term, ts []rdf.Triple) error {
	return tagStore(ctx, s.Store.ApplyFragment(ctx, g, r, ts))
}

func tagStore(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	return fmt.Errorf("%w: %w", errGraphStore, err)
}

// fencedStore asks fence before each write of the graph store (a
// snapshot's ReplaceGraph, a fragment's ApplyFragment), as the
// Destination asks Options.Fence before each state commit: an SDShare run
// whose lease ended under it (this node paused past it) writes no graph
// after another node took the Source over. What remains: a snapshot
// being loaded when the lease ended is one write, checked before it
// began.
type fencedStore struct {
	graphstore.Store
	fence func(context.Context) error
}

func (s fencedStore) ReplaceGraph(ctx context.Context, g string, ts iter.Seq2[rdf.Triple, error]) error {
	if err := s.fence(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("graph %s not replaced: %w", g, err)
	}
	return s.Store.ReplaceGraph(ctx, g, ts)
}

func (s fencedStore) ApplyFragment(ctx context.Context, g string, r rdf.Term, ts []rdf.Triple) error {
	if err := s.fence(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("fragment of %s not applied to graph %s: %w", r, g, err)
	}
	return s.Store.ApplyFragment(ctx, g, r, ts)
}
