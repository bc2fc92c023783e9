package sparql

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/internal/testing/testnet"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/graphstore"
)

// fake is an endpoint on loopback answering every request with one
// canned answer and counting the requests by kind.
type fake struct {
	status      int
	contentType string
	body        string
	updates     atomic.Int32 // application/sparql-update requests
	queries     atomic.Int32 // form queries
	puts        atomic.Int32
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	switch {
	case r.Method == http.MethodPut:
		f.puts.Add(1)
	case r.Header.Get("Content-Type") == "application/sparql-update":
		f.updates.Add(1)
		if strings.HasPrefix(string(b), "DROP SILENT GRAPH <"+TempGraphPrefix) {
			return // the clean-up after a failed load succeeds
		}
	default:
		f.queries.Add(1)
	}
	w.Header().Set("Content-Type", f.contentType)
	w.WriteHeader(f.status)
	io.WriteString(w, f.body)
}

func fakeStore(t *testing.T, f *fake) *Store {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, _ := testnet.Client(t)
	s := New(Endpoints{Update: srv.URL + "/sparql", Query: srv.URL + "/sparql", GraphStore: srv.URL + "/gsp"}, c)
	s.policy = retry.Policy{Retries: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}
	return s
}

const htmlError = `<!DOCTYPE html><html><head><title>Oops</title><style>p{}</style></head>
<body><h1>Internal &amp; Server Error</h1><p>The proxy   could
not reach the backend.</p></body></html>`

const virtuosoSyntax = "Virtuoso 37000 Error SP030: SPARQL compiler, line 1: syntax error at 'x'\n\nSPARQL query:\n" + "DELETE { … a megabyte of query … }"

// TestHostileEndpoint: every odd answer becomes a specific error that
// names the endpoint and carries the server's text, retried only when a
// repeat may help.
func TestHostileEndpoint(t *testing.T) {
	ctx := context.Background()
	r := rdf.IRI("http://example.org/r")
	frag := []rdf.Triple{{S: r, P: rdf.IRI("http://example.org/p"), O: rdf.Literal("v")}}
	tests := []struct {
		name        string
		f           *fake
		run         func(*Store) error
		want        error
		wantText    []string // in the error message
		notText     []string
		wantQueries int32 // requests the fake saw (attempts)
		wantUpdates int32
		wantPuts    int32
	}{
		{
			name: "500 with HTML on a query is retried, then reported with the page's text",
			f:    &fake{status: 500, contentType: "text/html", body: htmlError},
			run: func(s *Store) error {
				_, err := s.Graphs(ctx)
				return err
			},
			want:        ErrEndpoint,
			wantText:    []string{"/sparql answered 500", "Internal & Server Error The proxy could not reach the backend."},
			notText:     []string{"<h1>", "p{}"},
			wantQueries: 3,
		},
		{
			name: "Virtuoso's syntax error is not retried and its echoed query is cut",
			f:    &fake{status: 400, contentType: "text/plain", body: virtuosoSyntax},
			run:  func(s *Store) error { return s.ApplyFragment(ctx, "http://example.org/g", r, frag) },
			want: ErrEndpoint, wantText: []string{"Virtuoso 37000 Error SP030"}, notText: []string{"megabyte"},
			wantQueries: 1,
		},
		{
			name: "Virtuoso's run-time error in class 22 is final even as 500",
			f:    &fake{status: 500, contentType: "text/plain", body: "Virtuoso 22023 Error SR601: bad argument"},
			run: func(s *Store) error {
				_, err := s.Fragment(ctx, "http://example.org/g", r)
				return err
			},
			want: ErrEndpoint, wantText: []string{"22023"}, wantQueries: 1,
		},
		{
			name: "a deadlock (40001) is retried",
			f:    &fake{status: 500, contentType: "text/plain", body: "Virtuoso 40001 Error SR172: Transaction deadlocked"},
			run: func(s *Store) error {
				_, err := s.Graphs(ctx)
				return err
			},
			want: ErrEndpoint, wantText: []string{"deadlocked"}, wantQueries: 3,
		},
		{
			name: "garbage N-Triples from CONSTRUCT",
			f:    &fake{status: 200, contentType: "application/n-triples", body: "<http://example.org/s> <http://example.org/p> <oops\n"},
			run: func(s *Store) error {
				for _, err := range s.Triples(ctx, "http://example.org/g") {
					if err != nil {
						return err
					}
				}
				return nil
			},
			want: ErrResponse, wantText: []string{"N-Triples", "line 1"}, wantQueries: 1,
		},
		{
			name: "an HTML page where N-Triples were asked for",
			f:    &fake{status: 200, contentType: "text/html; charset=utf-8", body: htmlError},
			run: func(s *Store) error {
				for _, err := range s.Triples(ctx, "http://example.org/g") {
					if err != nil {
						return err
					}
				}
				return nil
			},
			want: ErrResponse, wantText: []string{`"text/html"`}, wantQueries: 1,
		},
		{
			name: "garbage JSON from the closure probe",
			f:    &fake{status: 200, contentType: "application/sparql-results+json", body: `{"results": {"bindings": [`},
			run:  func(s *Store) error { return s.ApplyFragment(ctx, "http://example.org/g", r, nil) },
			want: ErrResponse, wantQueries: 1,
		},
		{
			name: "a failed snapshot load drops the temporary graph and never moves it",
			f:    &fake{status: 503, contentType: "text/plain", body: "overloaded"},
			run: func(s *Store) error {
				return s.ReplaceGraph(ctx, "http://example.org/g", seq(frag))
			},
			want: ErrEndpoint, wantText: []string{"/gsp answered 503", "overloaded"},
			wantPuts: 3, wantUpdates: 1, // the DROP of the temporary graph, no replace
		},
		{
			name: "a failed replace request is not repeated",
			f:    &fake{status: 500, contentType: "text/plain", body: "Virtuoso 08C01 Error: lost"},
			run: func(s *Store) error {
				return s.ReplaceGraph(ctx, "http://example.org/g", seq(nil))
			},
			want: ErrEndpoint, wantText: []string{"replace graph"},
			wantUpdates: 2, // the replace once, then the DROP of the temporary graph
		},
	}
	for i := range tests {
		tt := &tests[i]
		t.Run(tt.name, func(t *testing.T) {
			s := fakeStore(t, tt.f)
			err := tt.run(s)
			if !errors.Is(err, tt.want) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			for _, w := range tt.wantText {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, w := range tt.notText {
				if strings.Contains(err.Error(), w) {
					t.Errorf("error %q contains %q", err, w)
				}
			}
			if got := tt.f.queries.Load(); got != tt.wantQueries {
				t.Errorf("%d queries, want %d", got, tt.wantQueries)
			}
			if got := tt.f.updates.Load(); got != tt.wantUpdates {
				t.Errorf("%d updates, want %d", got, tt.wantUpdates)
			}
			if got := tt.f.puts.Load(); got != tt.wantPuts {
				t.Errorf("%d puts, want %d", got, tt.wantPuts)
			}
		})
	}
}

// TestInvalidInput: what SPARQL cannot carry is refused before anything is
// sent, and a closed store refuses everything.
func TestInvalidInput(t *testing.T) {
	f := &fake{status: 200, contentType: "application/sparql-results+json", body: `{"results":{"bindings":[]}}`}
	s := fakeStore(t, f)
	ctx := context.Background()
	p := rdf.IRI("http://example.org/p")
	bad := []struct {
		name string
		t    rdf.Triple
	}{
		{"literal subject", rdf.Triple{S: rdf.Literal("x"), P: p, O: p}},
		{"blank predicate", rdf.Triple{S: p, P: rdf.Blank("b"), O: p}},
		{"IRI with >", rdf.Triple{S: rdf.IRI("http://e/a>b"), P: p, O: p}},
		{"IRI with space", rdf.Triple{S: p, P: p, O: rdf.IRI("http://e/a b")}},
		{"Virtuoso nodeID IRI", rdf.Triple{S: p, P: p, O: rdf.IRI("nodeID://b10000")}},
		{"bad language tag", rdf.Triple{S: p, P: p, O: rdf.LangLiteral("x", "en us")}},
		{"invalid UTF-8", rdf.Triple{S: p, P: p, O: rdf.Literal("\xff")}},
		{"zero term", rdf.Triple{S: p, P: p}},
	}
	for _, b := range bad {
		t.Run(b.name, func(t *testing.T) {
			if err := s.ApplyFragment(ctx, "http://example.org/g", p, []rdf.Triple{b.t}); !errors.Is(err, graphstore.ErrInvalid) {
				t.Errorf("ApplyFragment: %v, want graphstore.ErrInvalid", err)
			}
			if err := s.ReplaceGraph(ctx, "http://example.org/g", seq([]rdf.Triple{b.t})); !errors.Is(err, graphstore.ErrInvalid) {
				t.Errorf("ReplaceGraph: %v, want graphstore.ErrInvalid", err)
			}
		})
	}
	if err := s.ApplyFragment(ctx, "not an iri>", p, nil); !errors.Is(err, graphstore.ErrInvalid) {
		t.Errorf("bad graph name: %v", err)
	}
	if n := f.queries.Load() + f.updates.Load() + f.puts.Load(); n != 0 {
		t.Errorf("%d requests sent for invalid input", n)
	}
	s.Close()
	s.Close()
	if _, err := s.Graphs(ctx); !errors.Is(err, graphstore.ErrClosed) {
		t.Errorf("Graphs after Close: %v", err)
	}
	if err := s.ApplyFragment(ctx, "http://example.org/g", p, nil); !errors.Is(err, graphstore.ErrClosed) {
		t.Errorf("ApplyFragment after Close: %v", err)
	}
}
