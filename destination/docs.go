package destination

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/resourcesync-go/resourcesync/destination/discover"
)

type (
	doc     = discover.Doc
	setInfo = discover.Set
)

// ErrSourceDocument is a resource whose URI is one of the Source's own
// documents (its Source Description, a Capability List, list, index, dump
// manifest or package): never installed as a resource. A legitimate Source
// does not list them; a hostile one could otherwise plant a copy of its
// documents in DEST, or overwrite one a Destination serves from there.
var ErrSourceDocument = errors.New("a document of the Source, not a resource")

// docSet holds the URIs (NormalizeURI) of the Source's documents known to
// this run: those discovery found, those the Capability Lists name, and
// every document and dump package the run opened.
type docSet struct {
	mu sync.Mutex
	m  map[string]struct{}
}

func (s *docSet) add(u string) {
	if u == "" {
		return
	}
	s.mu.Lock()
	if s.m == nil {
		s.m = map[string]struct{}{}
	}
	s.m[NormalizeURI(u)] = struct{}{}
	s.mu.Unlock()
}

func (s *docSet) has(u string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[NormalizeURI(u)]
	return ok
}

// resourceRel is the path in DEST of a resource to install, or why it is
// refused: one of the Source's documents, or a URI the Mapper refuses;
// errExcluded for a path the filters leave out (not a failure).
// Every entry of a list, change or dump package goes through it.
func (e *engine) resourceRel(uri string) (string, error) {
	if e.docs.has(uri) {
		return "", fmt.Errorf("%w: %s", ErrSourceDocument, uri)
	}
	rel, err := e.m.Rel(uri)
	if err == nil && e.excluded(rel) {
		return rel, errExcluded
	}
	return rel, err
}

// open downloads a document (retried, spooled, size-capped) and reads its head.
func (e *engine) open(ctx context.Context, u string) (*doc, error) {
	e.docs.add(u)
	d, err := e.g.Open(ctx, u)
	if err == nil {
		e.docs.add(d.Requested)
		e.docs.add(d.URL) // after redirects
	}
	return d, err
}

func (e *engine) discover(ctx context.Context, source string) (string, []setInfo, error) {
	res, err := discover.Discover(ctx, e.g, source)
	if err != nil {
		return "", nil, err
	}
	e.docs.add(res.SourceDescription)
	if u, err := url.Parse(res.Base); err == nil {
		// Where a Source Description is looked for, read this run or not.
		if w, err := u.Parse("/.well-known/resourcesync"); err == nil {
			e.docs.add(w.String())
		}
		if w, err := u.Parse(".well-known/resourcesync"); err == nil {
			e.docs.add(w.String())
		}
	}
	for _, s := range res.Sets {
		for _, u := range []string{s.CapabilityList, s.Direct, s.ResourceList, s.ResourceDump, s.ChangeList, s.ChangeDump,
			s.ResourceListArchive, s.ChangeListArchive, s.ResourceDumpArchive, s.ChangeDumpArchive} {
			e.docs.add(u)
		}
	}
	return res.Base, res.Sets, nil
}
