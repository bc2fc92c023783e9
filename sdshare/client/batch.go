package client

import (
	"bufio"
	"context"
	"iter"
	"sync"

	"github.com/resourcesync-go/resourcesync/sdshare/atom"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// Bounds of one batch of fragments, one store write (one commit of the
// embedded store): fsync dominates a commit of a few fragments, so a
// page of them in one write is over ten times faster (BenchmarkFragments,
// boltstore's BenchmarkApplyFragments). maxBatchMemory counts
// sdshare.TripleMemory a statement, as MaxFragmentBytes does.
const (
	maxBatchFragments = 1000
	maxBatchMemory    = 32 << 20
)

// DefaultFetchers is how many fragments the client fetches at once by
// default (Config.Fetchers): one GET at a time kept it near 3,000
// fragments/s on loopback whatever the store.
const DefaultFetchers = 4

// readers are the buffers fragments are parsed through: the N-Triples
// and Turtle parsers read through a bufio.Reader of 64 KiB, and take one
// of at least that size as it is, so a fragment of a few hundred bytes
// does not allocate and clear 64 KiB (12% of the client's CPU in
// BenchmarkFragments).
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// fetched is an entry's fragment, or why there is none.
type fetched struct {
	frag graphstore.Fragment
	err  error
}

// prefetch yields the fragment of each entry, in order, by index: up to
// Config.Fetchers GETs run at once, and no more fragments than that are
// held beyond the one yielded. Stopping the loop cancels the rest.
func (s *syncer) prefetch(ctx context.Context, entries []atom.Entry) iter.Seq2[int, fetched] {
	return func(yield func(int, fetched) bool) {
		n := s.cfg.Fetchers
		if n <= 1 {
			for i, e := range entries {
				f, err := s.fetchEntry(ctx, e)
				if !yield(i, fetched{f, err}) {
					return
				}
			}
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		results := make([]chan fetched, len(entries))
		for i := range results {
			results[i] = make(chan fetched, 1)
		}
		credit := make(chan struct{}, n) // a slot per fragment fetched and not yet yielded
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, e := range entries {
				select {
				case credit <- struct{}{}:
				case <-ctx.Done():
					for _, r := range results[i:] {
						r <- fetched{err: ctx.Err()}
					}
					return
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					f, err := s.fetchEntry(ctx, e)
					results[i] <- fetched{f, err}
				}()
			}
		}()
		for i := range entries {
			r := <-results[i]
			<-credit
			if !yield(i, r) {
				return
			}
		}
	}
}
