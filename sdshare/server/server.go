package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/source/notify"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/storeurl"
)

// Defaults of a zero Config.
const (
	DefaultPageSize  = 500
	DefaultChunkSize = 10000
	DefaultRescan    = 2 * time.Second
	DefaultDebounce  = 200 * time.Millisecond
	DefaultAuthor    = "resourcesync sdshare server"
	// DefaultCanonicalSteps bounds the work of labelling one fragment's
	// blank nodes canonically (rdf.CanonicalBounded steps): about 10 s
	// of one core, several times what 256k blank nodes in cycles take
	// (some 11 to 30 steps a node).
	DefaultCanonicalSteps = 8 << 20
)

// CollectionConfig names one collection and where its RDF lives.
type CollectionConfig struct {
	Name string // URL segment: letters, digits, '.', '_', '-'
	Path string // an RDF file or a directory of RDF files
}

// Config configures Open.
type Config struct {
	// BaseURL is the public URL of the overview feed; every other URL is
	// below it. Must end with '/' (added if missing).
	BaseURL     string
	StateDir    string // one state file per collection, and the snapshot files
	Collections []CollectionConfig
	// PageSize is the number of entries per fragments feed page.
	PageSize int
	// ChunkSize is the number of resources per chunk of a chunked
	// snapshot; graphs with more resources offer a chunked snapshot feed.
	ChunkSize int
	// Rescan is the interval of the stat-based rescan that backs up
	// filesystem events (negative: none); Debounce is how long events must
	// be quiet before a reload.
	Rescan, Debounce time.Duration
	// Push lists SDShare Push receivers: every journal record of every
	// collection is POSTed to each, in order (SD-PUSH-*).
	Push []string
	// PushClient sends the pushes (nil: a client with a 30s timeout).
	PushClient *http.Client
	// PushBaseDelay and PushMaxDelay bound the backoff of failed pushes.
	PushBaseDelay, PushMaxDelay time.Duration
	Author                      string
	Log                         *slog.Logger
	// ResourceSync also publishes the collections as a ResourceSync
	// Source (see resourcesync.go): Resource List, Change Lists from the
	// same journal, each fragment a resource.
	ResourceSync bool
	// ChangeListPeriod is the ResourceSync Change List period (default
	// that of source/publish).
	ChangeListPeriod time.Duration
	// Notifier, with ResourceSync, publishes each collection's changes as
	// ResourceSync Change Notifications to a WebSub hub; the caller sets
	// its Pub and Hub, Open fills its Topic, CapabilityList and
	// ResourceBase when they are nil. Topics are
	// B .resourcesync/NAME/notifications.
	Notifier *notify.Notifier
	// CanonicalSteps bounds the work of labelling the blank nodes of one
	// fragment canonically, once per change of the fragment (0:
	// DefaultCanonicalSteps; negative: no bound). A fragment beyond it
	// is served with its labels as loaded, logged, and counted on
	// /healthz and in the metrics. A load of the collection spends at
	// most CanonicalSteps plus 64 a triple on all its fragments together;
	// past that, so are the remaining costly ones.
	CanonicalSteps int64
	// OpenStore, if set, opens each collection's state (its inventory and
	// change journal) instead of the embedded store StateDir/NAME.state;
	// name is the collection's name. The snapshot files stay in StateDir.
	// A store.Shared (PostgreSQL) is written by one server at a time:
	// Open takes its writer role, waiting up to LeadTimeout for another
	// holder, and Close gives it back; a server that loses the role (its
	// connection broke and another took over) is fenced: its writes fail
	// with store.ErrLocked, logged, until it is restarted.
	OpenStore func(ctx context.Context, name string) (store.Store, error)
	// LeadTimeout bounds that wait (default DefaultLeadTimeout).
	LeadTimeout time.Duration
	// NoBulk turns off the bulk fragment request (POST B NAME/bulk,
	// advertised by a Link header on the fragments feed; bulk.go): with
	// it, a client of this toolkit fetches each fragment by its own GET,
	// as every other SDShare client does.
	NoBulk bool
	// NoSync skips fsync of the state: tests only.
	NoSync bool
}

// DefaultLeadTimeout is how long Open waits for another server to give
// up a shared collection state.
const DefaultLeadTimeout = 30 * time.Second

// Errors of Open.
var (
	ErrConfig = errors.New("sdshare/server: bad configuration")
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)

// reserved are URL segments below the base that are not collections.
var reserved = map[string]bool{"metrics": true, "healthz": true, "robots.txt": true}

// Server serves collections as SDShare feeds.
type Server struct {
	cfg      Config
	base     string // BaseURL, ending with '/'
	basePath string // its path
	log      *slog.Logger
	cols     []*Collection
	byName   map[string]*Collection
	senders  []*pushWorker
	closeMu  sync.Mutex
	closed   bool
	metrics  *metrics
	offers   []offer
	// beforeBuild, if set, runs before a snapshot is built (tests hold
	// the builder there to observe 202).
	beforeBuild func(key string)
	// beforeCanon, if set, runs before a fragment with blank nodes is
	// labelled canonically (tests hold the loader there).
	beforeCanon func(iri string)
	rsWake      chan struct{}
}

// Open opens (or creates) the state of every collection and loads each
// graph once: the first load of a collection is its baseline, later loads
// (also after a restart) journal what changed.
func Open(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.PageSize <= 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.ChunkSize <= 0 {
		cfg.ChunkSize = DefaultChunkSize
	}
	if cfg.Rescan == 0 {
		cfg.Rescan = DefaultRescan
	}
	if cfg.Debounce <= 0 {
		cfg.Debounce = DefaultDebounce
	}
	switch {
	case cfg.CanonicalSteps == 0:
		cfg.CanonicalSteps = DefaultCanonicalSteps
	case cfg.CanonicalSteps < 0:
		cfg.CanonicalSteps = math.MaxInt64
	}
	if cfg.Author == "" {
		cfg.Author = DefaultAuthor
	}
	if cfg.StateDir == "" {
		return nil, fmt.Errorf("%w: no state directory", ErrConfig)
	}
	if len(cfg.Collections) == 0 {
		return nil, fmt.Errorf("%w: no collections", ErrConfig)
	}
	bu, err := url.Parse(cfg.BaseURL)
	if err != nil || (bu.Scheme != "http" && bu.Scheme != "https") || bu.Host == "" || bu.RawQuery != "" || bu.Fragment != "" {
		return nil, fmt.Errorf("%w: base URL %q must be an absolute http(s) URL without query", ErrConfig, cfg.BaseURL)
	}
	if !strings.HasSuffix(bu.Path, "/") {
		bu.Path += "/"
		bu.RawPath = ""
	}
	s := &Server{cfg: cfg, base: bu.String(), basePath: bu.Path, log: cfg.Log, byName: map[string]*Collection{}, offers: offers()}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("sdshare/server: state: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			s.Close()
		}
	}()
	for _, cc := range cfg.Collections {
		if !nameRE.MatchString(cc.Name) || reserved[cc.Name] {
			return nil, fmt.Errorf("%w: collection name %q (letters, digits, '.', '_', '-'; not %s)", ErrConfig, cc.Name, "metrics or healthz")
		}
		if s.byName[cc.Name] != nil {
			return nil, fmt.Errorf("%w: collection %q named twice", ErrConfig, cc.Name)
		}
		st, release, err := s.openStore(ctx, cc.Name)
		if err != nil {
			return nil, fmt.Errorf("sdshare/server: collection %s: %w", cc.Name, err)
		}
		c := &Collection{name: cc.Name, path: cc.Path, srv: s, st: st, releaseStore: release,
			snapDir: filepath.Join(cfg.StateDir, cc.Name+".snapshots"), graphDir: indexDir(cfg.StateDir, cc.Name),
			changed: make(chan struct{}, 1)}
		s.cols = append(s.cols, c)
		s.byName[cc.Name] = c
		if err := os.MkdirAll(c.snapDir, 0o755); err != nil {
			return nil, fmt.Errorf("sdshare/server: collection %s: %w", cc.Name, err)
		}
		// The graph files of an earlier run are rebuilt by the first load.
		if err := os.RemoveAll(c.graphDir); err != nil {
			return nil, fmt.Errorf("sdshare/server: collection %s: %w", cc.Name, err)
		}
		if err := os.MkdirAll(c.graphDir, 0o755); err != nil {
			return nil, fmt.Errorf("sdshare/server: collection %s: %w", cc.Name, err)
		}
		rep, err := c.Load(ctx, true)
		if err != nil {
			return nil, err
		}
		s.log.Info("collection loaded", "collection", c.name, "resources", rep.Resources, "triples", rep.Triples,
			"baseline", rep.Baseline, "created", rep.Created, "updated", rep.Updated, "deleted", rep.Deleted)
	}
	for _, u := range cfg.Push {
		for _, c := range s.cols {
			s.senders = append(s.senders, newPushWorker(s, c, u))
		}
	}
	s.metrics = newMetrics(s)
	if cfg.ResourceSync {
		s.rsWake = make(chan struct{}, 1)
		if n := cfg.Notifier; n != nil {
			if n.Topic == nil {
				n.Topic = func(set string) string { return notify.TopicURL(s.base, set) }
			}
			if n.CapabilityList == nil {
				n.CapabilityList = func(set string) string { return s.base + ".resourcesync/" + set + "/capabilitylist.xml" }
			}
			if n.ResourceBase == nil {
				n.ResourceBase = func(set string) string { return s.byName[set].rsBase() }
				n.ResourceLoc = func(string) func(string) string { return rsPath }
			}
			for _, c := range s.cols {
				if err := n.Init(ctx, c.name, c.st); err != nil {
					return nil, fmt.Errorf("sdshare/server: notifications of %s: %w", c.name, err)
				}
			}
		}
		if err := s.publishRS(ctx); err != nil {
			return nil, err
		}
		for _, c := range s.cols {
			c.OnChange(s.wakeRS)
		}
	}
	ok = true
	return s, nil
}

// BaseURL returns the overview feed's URL.
func (s *Server) BaseURL() string { return s.base }

// Collection returns the collection called name, or nil.
func (s *Server) Collection(name string) *Collection { return s.byName[name] }

// Collections returns every collection, in configuration order.
func (s *Server) Collections() []*Collection { return append([]*Collection(nil), s.cols...) }

// Close closes every state store. Call it after Run has returned.
func (s *Server) Close() error {
	s.closeMu.Lock()
	defer s.closeMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	var errs []error
	for _, c := range s.cols {
		if c.releaseStore != nil {
			c.releaseStore()
		}
		errs = append(errs, c.st.Close())
		if v := c.cur; v != nil {
			v.retired.Store(true)
			v.done()
		}
		if c.keptF != nil {
			c.keptF.Close()
		}
	}
	return errors.Join(errs...)
}

// stateFile is the embedded state of a collection in StateDir: NAME.state.
func stateFile(name string) string { return name + ".state" }

// openStore opens a collection's state: cfg.OpenStore, or the embedded
// store in StateDir (through the store registry, in this server's layout:
// stateFile). Of a shared store it takes the writer role (release
// gives it back): two servers journaling one collection would each
// publish the other's changes as their own.
func (s *Server) openStore(ctx context.Context, name string) (st store.Store, release func(), err error) {
	if s.cfg.OpenStore == nil {
		db, err := storeurl.Local(s.cfg.StateDir).OpenWith(ctx, name, &storeurl.Options{NoSync: s.cfg.NoSync, FileName: stateFile})
		if err != nil {
			return nil, nil, err
		}
		return db, nil, nil
	}
	st, err = s.cfg.OpenStore(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	sh, ok := st.(store.Shared)
	if !ok {
		return st, nil, nil
	}
	wait := s.cfg.LeadTimeout
	if wait <= 0 {
		wait = DefaultLeadTimeout
	}
	lctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	_, release, err = sh.Lead(lctx)
	if err != nil {
		st.Close()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: another server writes this collection's state (waited %s)", store.ErrLocked, wait)
		}
		return nil, nil, err
	}
	return st, release, nil
}

// Run keeps the collections up to date (filesystem events, periodic
// rescans), builds their snapshots and runs the push senders, until ctx
// ends; then it returns nil.
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, c := range s.cols {
		wg.Go(func() { c.watch(ctx) })
		wg.Go(func() { c.buildSnapshots(ctx) })
	}
	for _, w := range s.senders {
		wg.Go(func() { w.run(ctx) })
	}
	if s.rsWake != nil {
		wg.Go(func() { s.runRS(ctx) })
	}
	wg.Wait()
	return nil
}

// Handler returns the HTTP handler of every feed and data URL, plus
// metrics and healthz below the base path.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }
