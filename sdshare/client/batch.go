package client

import (
	"bufio"
	"context"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/sdshare"
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
	mem  int64 // what it holds (sdshare.TripleMemory a statement)
	bulk bool  // it came in a bulk request
}

// pagesAhead is how many fragments feed pages are read ahead of the one
// being applied, and aheadMemory what their fetched fragments may hold
// (beyond the Config.Fetchers in flight): while a page's last batch
// commits, the next page's fragments are already on their way.
const (
	pagesAhead  = 2
	aheadMemory = maxBatchMemory
)

// feedPage is one page of the fragments feed, its entries in the order
// they are applied (by updated) and their fragments as they arrive
// (take), or why the feed stops here (err).
type feedPage struct {
	url     string
	feed    *atom.Feed
	entries []atom.Entry
	future  []futureEntry // entries clamped by clampTime, for the report
	results []chan fetched
	err     error
	p       *pipeline
}

// futureEntry is an entry whose updated was in the future.
type futureEntry struct {
	link     string
	id       string
	from, to time.Time
}

// take waits for the fragment of entry i.
func (fp *feedPage) take(ctx context.Context, i int) fetched {
	select {
	case r := <-fp.results[i]:
		fp.p.release(r.mem)
		return r
	case <-ctx.Done():
		return fetched{err: ctx.Err()}
	}
}

// pipeline bounds the fragments read ahead: inflight GETs at once, and
// the memory of those fetched and not yet taken.
type pipeline struct {
	inflight chan struct{}
	mu       sync.Mutex
	cond     *sync.Cond
	held     int64
	heldN    int
}

func (p *pipeline) release(mem int64) {
	p.mu.Lock()
	p.held -= mem
	p.heldN--
	p.cond.Broadcast()
	p.mu.Unlock()
}

// hold counts the memory of a fetched fragment of n statements until it
// is taken, and returns it.
func (p *pipeline) hold(n int) int64 {
	mem := int64(n) * sdshare.TripleMemory
	p.mu.Lock()
	p.held += mem
	p.mu.Unlock()
	return mem
}

// full reports whether the fragments fetched ahead hold all they may.
func (p *pipeline) full() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held >= aheadMemory
}

// reserve waits until another fragment may be fetched ahead.
func (p *pipeline) reserve(ctx context.Context) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for (p.held >= aheadMemory || p.heldN >= maxBatchFragments) && ctx.Err() == nil {
		p.cond.Wait()
	}
	if ctx.Err() != nil {
		return false
	}
	p.heldN++
	return true
}

// feedPages yields the fragments feed's pages from first on, following
// rel="next" (loops and Config.MaxPages refused), each with its
// fragments fetched ahead: up to Config.Fetchers GETs at once, across
// page boundaries, up to pagesAhead pages and aheadMemory of fragments
// ahead of the consumer. A page with err ends the feed. Stopping the
// loop cancels the rest. The consumer alone touches the report and the
// state, so t never passes what it has applied.
func (s *syncer) feedPages(ctx context.Context, first string) iter.Seq[*feedPage] {
	return func(yield func(*feedPage) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		p := &pipeline{inflight: make(chan struct{}, max(s.cfg.Fetchers, 1))}
		p.cond = sync.NewCond(&p.mu)
		stopWake := context.AfterFunc(ctx, func() {
			p.mu.Lock()
			p.cond.Broadcast()
			p.mu.Unlock()
		})
		defer stopWake()
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		pages := make(chan *feedPage, pagesAhead-1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(pages)
			seen := pageSet{}
			send := func(fp *feedPage) bool {
				select {
				case pages <- fp:
					return true
				case <-ctx.Done():
					return false
				}
			}
			for u := first; u != ""; {
				u = withoutFragment(u)
				fp := &feedPage{url: u, p: p}
				if err := seen.add(u, s.cfg.MaxPages); err != nil {
					fp.err = err
					send(fp)
					return
				}
				page, fr, err := s.f.feedHeader(ctx, u)
				if err != nil {
					fp.err = err
					send(fp)
					return
				}
				fp.feed = page
				fp.entries = slices.Clone(page.Entries)
				for i := range fp.entries {
					e := &fp.entries[i]
					if t, ok := s.clampTime(page.Updated, e.Updated); !ok {
						fp.future = append(fp.future, futureEntry{link: entryLink(*e), id: e.ID, from: e.Updated, to: t})
						e.Updated = t
					}
				}
				slices.SortStableFunc(fp.entries, func(a, b atom.Entry) int { return a.Updated.Compare(b.Updated) })
				fp.results = make([]chan fetched, len(fp.entries))
				for i := range fp.results {
					fp.results[i] = make(chan fetched, 1)
				}
				if !send(fp) {
					return
				}
				// The entries a bulk request can carry (bulk.go) are
				// gathered, in order, into batches of bulkBatch; a batch
				// is sent before any later entry's own GET, and at the
				// page's end. A batch holds reserved entries nobody can
				// take before it is sent, fewer than reserve's bound, so
				// reserve never waits on it.
				dir := s.bulkDir(fr)
				var pend []int
				var paths []string
				flush := func() bool {
					if len(pend) == 0 {
						return true
					}
					select {
					case p.inflight <- struct{}{}:
					case <-ctx.Done():
						return false
					}
					idx, ps := pend, paths
					pend, paths = nil, nil
					wg.Add(1)
					go func() {
						defer wg.Done()
						s.fetchBulk(ctx, fp, dir, idx, ps, &wg)
					}()
					return true
				}
				for i, e := range fp.entries {
					if !p.reserve(ctx) {
						return // the consumer stopped: nobody takes the rest
					}
					if dir != "" && !s.bulk.off() {
						if path, ok := bulkPath(dir, e); ok {
							pend, paths = append(pend, i), append(paths, path)
							if len(pend) == bulkBatch && !flush() {
								return
							}
							continue
						}
					}
					if !flush() {
						return
					}
					select {
					case p.inflight <- struct{}{}:
					case <-ctx.Done():
						return
					}
					wg.Add(1)
					go func() {
						defer wg.Done()
						s.fetchOne(ctx, fp, i)
					}()
				}
				if !flush() {
					return
				}
				u = page.Next()
			}
		}()
		for fp := range pages {
			if !yield(fp) {
				return
			}
		}
	}
}
