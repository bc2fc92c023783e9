package memstore

import (
	"context"
	"iter"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// Store is an in-memory graphstore.Store. The zero value is not usable;
// call New.
type Store struct {
	mu     sync.RWMutex
	closed bool
	graphs map[string]*graph
	next   atomic.Uint64 // last blank node number handed out
}

var _ graphstore.Store = (*Store)(nil)

// graph is one named graph: its triples by subject.
type graph struct {
	bySubject map[rdf.Term]map[rdf.Triple]struct{}
	n         int
}

func newGraph() *graph { return &graph{bySubject: map[rdf.Term]map[rdf.Triple]struct{}{}} }

func (g *graph) add(t rdf.Triple) {
	m := g.bySubject[t.S]
	if m == nil {
		m = map[rdf.Triple]struct{}{}
		g.bySubject[t.S] = m
	}
	if _, ok := m[t]; !ok {
		m[t] = struct{}{}
		g.n++
	}
}

// closure returns the subjects of r's fragment (SD-SRV-26): r and the
// blank nodes reachable from it through blank nodes, each once.
func (g *graph) closure(r rdf.Term) []rdf.Term {
	if g == nil {
		return nil
	}
	seen := map[rdf.Term]bool{r: true}
	todo := []rdf.Term{r}
	for i := 0; i < len(todo); i++ {
		for t := range g.bySubject[todo[i]] {
			if t.O.IsBlank() && !seen[t.O] {
				seen[t.O] = true
				todo = append(todo, t.O)
			}
		}
	}
	return todo
}

// New returns an empty store.
func New() *Store { return &Store{graphs: map[string]*graph{}} }

// relabel gives the blank nodes of one call fresh store labels; labels is
// that call's label map.
type relabel struct {
	s      *Store
	labels map[string]rdf.Term
}

func (r *relabel) term(t rdf.Term) rdf.Term {
	if !t.IsBlank() {
		return t
	}
	if n, ok := r.labels[t.Value]; ok {
		return n
	}
	n := rdf.Blank("m" + strconv.FormatUint(r.s.next.Add(1), 10))
	r.labels[t.Value] = n
	return n
}

func (r *relabel) triple(t rdf.Triple) rdf.Triple {
	return rdf.Triple{S: r.term(t.S), P: t.P, O: r.term(t.O)}
}

func (s *Store) check(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.closed {
		return graphstore.ErrClosed
	}
	return nil
}

// ReplaceGraph implements graphstore.Store. The new graph is built apart
// and swapped in, so memory holds both while it loads.
func (s *Store) ReplaceGraph(ctx context.Context, g string, ts iter.Seq2[rdf.Triple, error]) error {
	if err := graphstore.CheckGraph(g); err != nil {
		return err
	}
	s.mu.RLock()
	err := s.check(ctx)
	s.mu.RUnlock()
	if err != nil {
		return err
	}
	ng := newGraph()
	rl := &relabel{s: s, labels: map[string]rdf.Term{}}
	i := 0
	for t, err := range ts {
		if err != nil {
			return err
		}
		if err := graphstore.CheckTriple(t); err != nil {
			return err
		}
		if i++; i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		ng.add(rl.triple(t))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	if ng.n == 0 {
		delete(s.graphs, g)
	} else {
		s.graphs[g] = ng
	}
	return nil
}

// ApplyFragment implements graphstore.Store.
func (s *Store) ApplyFragment(ctx context.Context, g string, r rdf.Term, ts []rdf.Triple) error {
	if err := graphstore.CheckResource(g, r); err != nil {
		return err
	}
	for _, t := range ts {
		if err := graphstore.CheckTriple(t); err != nil {
			return err
		}
	}
	rl := &relabel{s: s, labels: map[string]rdf.Term{}}
	add := make([]rdf.Triple, len(ts))
	for i, t := range ts {
		add[i] = rl.triple(t)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(ctx); err != nil {
		return err
	}
	gr := s.graphs[g]
	if gr == nil {
		gr = newGraph()
	}
	// Nothing below can fail, so changing the graph in place is atomic
	// under the lock; readers copy what they return before it is released.
	for _, b := range gr.closure(r) {
		gr.n -= len(gr.bySubject[b])
		delete(gr.bySubject, b)
	}
	for _, t := range add {
		gr.add(t)
	}
	if gr.n == 0 {
		delete(s.graphs, g)
	} else {
		s.graphs[g] = gr
	}
	return nil
}

// Fragment implements graphstore.Store.
func (s *Store) Fragment(ctx context.Context, g string, r rdf.Term) ([]rdf.Triple, error) {
	if err := graphstore.CheckResource(g, r); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	gr := s.graphs[g]
	var out []rdf.Triple
	for _, b := range gr.closure(r) {
		for t := range gr.bySubject[b] {
			out = append(out, t)
		}
	}
	return out, nil
}

// Triples implements graphstore.Store. It copies the graph when the
// iteration starts.
func (s *Store) Triples(ctx context.Context, g string) iter.Seq2[rdf.Triple, error] {
	return func(yield func(rdf.Triple, error) bool) {
		if err := graphstore.CheckGraph(g); err != nil {
			yield(rdf.Triple{}, err)
			return
		}
		s.mu.RLock()
		if err := s.check(ctx); err != nil {
			s.mu.RUnlock()
			yield(rdf.Triple{}, err)
			return
		}
		var all []rdf.Triple
		if gr := s.graphs[g]; gr != nil {
			all = make([]rdf.Triple, 0, gr.n)
			for _, m := range gr.bySubject {
				for t := range m {
					all = append(all, t)
				}
			}
		}
		s.mu.RUnlock()
		for i, t := range all {
			if i%1024 == 1023 {
				if err := ctx.Err(); err != nil {
					yield(rdf.Triple{}, err)
					return
				}
			}
			if !yield(t, nil) {
				return
			}
		}
	}
}

// Graphs implements graphstore.Store.
func (s *Store) Graphs(ctx context.Context) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if err := s.check(ctx); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(s.graphs))
	for g := range s.graphs {
		names = append(names, g)
	}
	slices.Sort(names)
	return names, nil
}

// Close implements graphstore.Store; it drops the content.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.graphs = nil
	return nil
}
