package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/server"
	"github.com/resourcesync-go/resourcesync/source/status"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/storeurl"
	"github.com/resourcesync-go/resourcesync/storage"
)

// SetConfig names a directory published as one set of resources.
type SetConfig struct {
	Name string // letters, digits, '.', '_' and '-'
	Dir  string
	// Content, if set, is the set's collection instead of Dir: a bucket
	// (or any storage.Content) listed by each scan (no filesystem watch)
	// and read for the resources and dump packages. Dir is then unused.
	// The state must be in Config.StateDir or Config.OpenStore: such a
	// collection has no DIR/.resourcesync. The caller closes it after the
	// Source.
	Content storage.Content
}

// Config configures a Source.
type Config struct {
	// BaseURL is the Source's base URL, ending with "/". With one set its
	// resources are at BaseURL + path; with several, at BaseURL + name +
	// "/" + path.
	BaseURL string
	Sets    []SetConfig
	// StateDir holds each set's state (<StateDir>/<set>/state.db, unless
	// OpenStore is set) and, when Out is empty, the published documents
	// (<StateDir>/docs).
	StateDir string
	// OpenStore, if set, opens each set's state instead of the embedded
	// store in StateDir. When it returns a store.Shared (a database that
	// several Source processes open), the Source is a replica: see Run.
	// Dumps and Archives are then off (see publish.Config.Replicas).
	OpenStore func(ctx context.Context, set string) (store.Store, error)
	// Out, if set, is where documents are written (publish's OUT).
	Out string
	// NoCompanions turns off the HTML page publish writes beside each
	// document in Out (publish.Config.NoCompanions). Without Out there
	// are none: the server negotiates each document's HTML view.
	NoCompanions bool
	// Skip lists path.Match patterns of files and directories not
	// published (see scan.Options.Skip).
	Skip []string
	// Exclude lists more paths that are not scanned (StateDir and Out
	// never are), e.g. a state directory apart from StateDir.
	Exclude []string
	// AllowEmpty lets a scan that finds a set's directory holding no file
	// while its inventory holds resources journal the deletion of every
	// resource. By default such a scan is refused (scan.ErrEmptyRoot: an
	// unmounted share or an emptied directory would otherwise make every
	// mirror delete everything): the set keeps its last state, the other
	// sets are scanned and published, and Update returns the refusal.
	AllowEmpty bool

	ChangeListPeriod time.Duration
	// MaxEntries is the largest number of entries per document (see
	// publish.Config.MaxEntries); default rs.MaxEntries.
	MaxEntries int
	Dumps      bool
	// DumpsOnDemand (with Dumps) writes no dump package: Handler produces
	// each when it is requested, streamed from the set's files
	// (publish.Config.DumpsOnDemand), so the state holds no copy of the
	// collection. serve's default; publish (static files) writes them.
	DumpsOnDemand bool
	DumpPartBytes int64
	DumpInterval  time.Duration
	Archives      bool
	// ArchivedDumps is how many previous written Resource Dumps the
	// Resource Dump Archive keeps (publish.Config.ArchivedResourceDumps:
	// 0 is its default, negative none).
	ArchivedDumps int
	// NoFeeds turns off the change feeds: by default each set's journal is
	// also published as an IIIF Change Discovery 1.0 collection and an
	// LDES (publish.Config.Feeds, package feed).
	NoFeeds bool
	// PlainSitemap also writes plain sitemaps.org sitemaps of every set,
	// named by robots.txt (publish.Config.PlainSitemap).
	PlainSitemap bool
	// FeedPageSize is the number of activities per feed page
	// (publish.Config.FeedPageSize); default feed.DefaultPageSize.
	FeedPageSize int
	// OpenChangeList: each Capability List names the open Change List
	// instead of the Change List Index (publish.Config.OpenChangeList).
	OpenChangeList bool
	// Notification, if set, gives each set's change-notification channel
	// (see publish.Config.Notification).
	Notification func(set string) (topicURL, hubURL string)
	// CapabilityLinks, if set, adds root links to each set's Capability
	// List (see publish.Config.CapabilityLinks).
	CapabilityLinks func(set string) []rs.Link
	// OnUpdate, if set, runs during every Update that committed journal
	// records, with the journal's last sequence number per set before and
	// after the update. It runs once the records are durable and before
	// the documents are published again.
	OnUpdate func(ctx context.Context, set string, st store.Store, fromSeq, toSeq uint64)
	// OnPublished, if set, runs after every update whose documents were
	// published, per set this process leads, with the journal's last
	// sequence number the published documents cover. The live push
	// (source/notify.Push) sends changes here: a subscriber that connects
	// and then reads the Change Lists finds each change in one or the
	// other.
	OnPublished func(ctx context.Context, set string, st store.Store, toSeq uint64)
	// OnLead, if set, runs each time this process takes a shared set's
	// scanner role, before its first scan as the leader (a set whose store
	// is not shared is led from Open on and never calls it). The change
	// notifier starts its channel here, so that the first change the new
	// leader journals is notified.
	OnLead func(ctx context.Context, set string, st store.Store) error

	// StatusHub, if set, is the embedded WebSub hub whose subscribers,
	// backlog and dead letters the status page (BASE/.resourcesync/)
	// shows, read-only.
	StatusHub status.Hub
	// StatusSections, if set, adds sections to the status page (such as
	// the OAI-PMH repository whose records the Source publishes).
	StatusSections func() []status.Section
	// SandboxResources serves the resources with "Content-Security-Policy:
	// sandbox" (server.Handler.SandboxResources): set when admin pages share
	// the Source's origin.
	SandboxResources bool
	// NoBulk turns off the bulk GET of small resources
	// (server.Handler.NoBulk).
	NoBulk bool

	Logger *slog.Logger
	Now    func() time.Time
}

var setName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]*$`)

type set struct {
	name    string
	dir     string
	content storage.Content // instead of dir (SetConfig.Content)
	abs     string          // dir, absolute
	st      store.Store
	shared  store.Shared // st, when several processes share it
	// lead is done when the scanner role of a shared set is lost; nil
	// while this process does not hold it. Sets that are not shared are
	// always led.
	lead atomic.Pointer[context.Context]
	// yield asks leadLoop to give the role up for a while: this
	// process's directory is empty (scan.ErrEmptyRoot), another replica's
	// may be mounted.
	yield   chan struct{}
	scanner *scan.Scanner
	// refused says when the last scan was refused (scan.ErrEmptyRoot), nil
	// after one that was not: the status page shows it.
	refused atomic.Pointer[time.Time]
	base    string // resource URL prefix
	prefix  string // resource URL path prefix
	// notified is the journal sequence up to which Config.OnUpdate was
	// called (valid when notifiedOK; not shared stores only), so that
	// changes recorded by ScanPaths are notified by the next publish.
	// In memory only, and that is enough: OnUpdate is a prompt, the change
	// notifier keeps its own position in the store (source/notify), so
	// changes ScanPaths journaled before a kill -9 are sent after the
	// restart by its retry ticker (TestScanPathsKilledBeforePublishNotified).
	notified   uint64
	notifiedOK bool
}

// Source is a running Source. Update and Run may be called from one
// goroutine at a time; Handler may serve concurrently with them.
type Source struct {
	cfg    Config
	shared bool // the sets' stores are store.Shared: this process is a replica
	log    *slog.Logger
	out    string
	mount  string
	sets   []*set
	mu     sync.Mutex // serialises Update

	renderErr string // the last render error logged (Run's goroutine only)

	statusMu sync.Mutex
	status   []*status.Handler // the status pages of Handler, stopped by Close
}

// Open opens (creating if needed) the state of every set. It does not scan.
func Open(cfg Config) (*Source, error) {
	if len(cfg.Sets) == 0 {
		return nil, errors.New("source: no set of resources")
	}
	bu, err := url.Parse(cfg.BaseURL)
	if err != nil || (bu.Scheme != "http" && bu.Scheme != "https") || bu.Host == "" {
		return nil, fmt.Errorf("source: base URL %q must be an absolute http(s) URL", cfg.BaseURL)
	}
	if bu.Path == "" {
		bu.Path = "/"
	}
	if bu.Path[len(bu.Path)-1] != '/' {
		bu.Path += "/"
	}
	cfg.BaseURL = bu.String()
	if cfg.StateDir == "" {
		return nil, errors.New("source: no state directory")
	}
	s := &Source{cfg: cfg, log: cfg.Logger, out: cfg.Out, mount: bu.EscapedPath()}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.out == "" {
		s.out = filepath.Join(cfg.StateDir, "docs")
	}
	// Every directory first, before anything is created: the default
	// state directory lies inside the first, which MkdirAll would make.
	if err := CheckDirs(cfg); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.out, 0o755); err != nil {
		return nil, fmt.Errorf("source: %w", err)
	}
	seen := map[string]bool{}
	for _, sc := range cfg.Sets {
		if !setName.MatchString(sc.Name) || seen[sc.Name] {
			s.Close()
			return nil, fmt.Errorf("source: invalid or repeated set name %q", sc.Name)
		}
		seen[sc.Name] = true
		var abs string
		if sc.Content == nil {
			fi, err := os.Stat(sc.Dir)
			a, aerr := filepath.Abs(sc.Dir)
			if err != nil || !fi.IsDir() || aerr != nil {
				s.Close()
				return nil, fmt.Errorf("source: set %s: %s is not a directory", sc.Name, sc.Dir)
			}
			abs = a
		}
		st, err := s.openStore(sc.Name)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("source: set %s: %w", sc.Name, err)
		}
		sh, _ := st.(store.Shared)
		if len(s.sets) > 0 && (sh != nil) != s.shared {
			st.Close()
			s.Close()
			return nil, fmt.Errorf("source: set %s: shared and embedded stores mixed", sc.Name)
		}
		s.shared = sh != nil
		var exclude []string
		if sc.Content == nil {
			exclude = s.excludes(abs)
		}
		scanner, err := scan.New(scan.Options{
			Root: sc.Dir, Content: sc.Content, Store: st, Exclude: exclude, Skip: cfg.Skip,
			// An unmounted or emptied directory (a replica's mount, too)
			// must not become the deletion of everything.
			RefuseEmptyRoot: !cfg.AllowEmpty,
			Logger:          s.log.With("set", sc.Name), Now: cfg.Now,
		})
		if err != nil {
			st.Close()
			s.Close()
			return nil, fmt.Errorf("source: set %s: %w", sc.Name, err)
		}
		base, prefix := cfg.BaseURL, s.mount
		if len(cfg.Sets) > 1 {
			base += sc.Name + "/"
			prefix += sc.Name + "/"
		}
		s.sets = append(s.sets, &set{name: sc.Name, dir: sc.Dir, content: sc.Content, abs: abs, st: st, shared: sh, yield: make(chan struct{}, 1), scanner: scanner, base: base, prefix: prefix})
	}
	if s.shared {
		if s.cfg.Dumps || s.cfg.Archives {
			s.log.Info("shared store: Resource Dumps, Change Dumps and archives are off (replicas render every document from the store; those files would exist only where they were written)")
		}
		s.cfg.Dumps, s.cfg.Archives = false, false
	}
	return s, nil
}

// CheckDirs checks that every set's directory exists, as Open does
// first: call it before creating anything in a state directory that may
// lie inside one (the default, DIR/.resourcesync), which would make DIR.
func CheckDirs(cfg Config) error {
	for _, sc := range cfg.Sets {
		if sc.Content != nil {
			continue
		}
		if err := checkDir(sc.Dir); err != nil {
			return fmt.Errorf("source: set %s: %w", sc.Name, err)
		}
	}
	return nil
}

// checkDir says why dir cannot be published: missing (a typo, an
// unmounted share), or not a directory.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist (not mounted? a typo?); create it first to publish an empty directory", dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return fmt.Errorf("%s is not a directory", dir)
	}
	return nil
}

// excludes returns the paths a set's scan leaves out: the state, the
// documents (publish's OUT), robots.txt at OUT's root and Config.Exclude.
// Each is also given as a path under the set's directory (abs) when it
// lies there by another spelling (a symbolic link on the way), since the
// scanner compares the paths it walks.
func (s *Source) excludes(abs string) []string {
	ex := append([]string{s.cfg.StateDir, s.out, filepath.Join(s.out, "robots.txt")}, s.cfg.Exclude...)
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return ex
	}
	for _, p := range ex[:len(ex):len(ex)] {
		pa, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		// The longest existing prefix of p, resolved: robots.txt may
		// not exist yet.
		dir, rest := pa, ""
		for {
			if r, err := filepath.EvalSymlinks(dir); err == nil {
				dir = r
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			rest = filepath.Join(filepath.Base(dir), rest)
			dir = parent
		}
		rel, err := filepath.Rel(real, filepath.Join(dir, rest))
		if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		if alt := filepath.Join(abs, rel); alt != pa {
			ex = append(ex, alt)
		}
	}
	return ex
}

// openStore opens a set's state: cfg.OpenStore, or the embedded store in
// StateDir (through the store registry, as --store DIR opens it).
func (s *Source) openStore(name string) (store.Store, error) {
	if s.cfg.OpenStore != nil {
		return s.cfg.OpenStore(context.Background(), name)
	}
	return storeurl.Local(s.cfg.StateDir).Open(context.Background(), name)
}

// Shared reports whether the sets' stores are shared with other Source
// processes (replicas).
func (s *Source) Shared() bool { return s.shared }

// leads reports whether this process may write st's state now, and the
// context that ends when it may no longer (the role is lost).
func (st *set) leads() (context.Context, bool) {
	if st.shared == nil {
		return context.Background(), true
	}
	if c := st.lead.Load(); c != nil && (*c).Err() == nil {
		return *c, true
	}
	return nil, false
}

// BaseURL returns the normalised base URL.
func (s *Source) BaseURL() string { return s.cfg.BaseURL }

// Out returns the directory the documents are written to.
func (s *Source) Out() string { return s.out }

// CapabilityListURL returns the URL of a set's Capability List.
func (s *Source) CapabilityListURL(set string) string {
	return s.cfg.BaseURL + ".resourcesync/" + set + "/capabilitylist.xml"
}

// Store returns a set's state store, or nil.
func (s *Source) Store(name string) store.Store {
	for _, st := range s.sets {
		if st.name == name {
			return st.st
		}
	}
	return nil
}

// Report says what one Update did.
type Report struct {
	Scans   map[string]scan.Stats
	Publish publish.Report
}

// Scan scans every set, recording changes in the journal, without
// publishing.
func (s *Source) Scan(ctx context.Context) (map[string]scan.Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scan(ctx)
}

func (s *Source) scan(ctx context.Context) (map[string]scan.Stats, error) {
	out := map[string]scan.Stats{}
	var refused []error
	for _, st := range s.sets {
		if _, ok := st.leads(); !ok {
			continue
		}
		stats, err := st.scanner.Scan(ctx)
		out[st.name] = stats
		if err == nil {
			st.refused.Store(nil)
		}
		if err != nil {
			if errors.Is(err, scan.ErrEmptyRoot) && st.shared == nil {
				// This set keeps its last state; the others go on.
				refused = append(refused, st.refusal(err))
				continue
			}
			if st.shared != nil && errors.Is(err, scan.ErrEmptyRoot) {
				select {
				case st.yield <- struct{}{}:
				default:
				}
			}
			return out, fmt.Errorf("scan of set %s: %w", st.name, err)
		}
	}
	return out, errors.Join(refused...)
}

// refusal records and returns the error of a set whose scan was refused
// (scan.ErrEmptyRoot).
func (st *set) refusal(err error) error {
	now := time.Now()
	st.refused.Store(&now)
	return fmt.Errorf("scan of set %s: %w; its last state is kept and published (if the directory was emptied on purpose, run with --allow-empty)", st.name, err)
}

// problem is what the status page says of a set whose last scan was
// refused.
func (st *set) problem() string {
	t := st.refused.Load()
	if t == nil {
		return ""
	}
	return fmt.Sprintf("The last scan (%s) found the directory missing or holding no file while the state holds resources (not mounted? emptied?): nothing was recorded as deleted; the last good state is served. If the directory was emptied on purpose, restart with --allow-empty.", t.UTC().Format(time.RFC3339))
}

// Refused reports whether err (from Update, UpdatePaths or Scan) is only
// the refusal of one or more sets' scans because their directories were
// missing or held no file (scan.ErrEmptyRoot): the other sets were
// scanned and the documents published.
func Refused(err error) bool {
	if err == nil {
		return false
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if !errors.Is(e, scan.ErrEmptyRoot) {
				return false
			}
		}
		return true
	}
	return errors.Is(err, scan.ErrEmptyRoot)
}

// Update scans every set and publishes the documents.
func (s *Source) Update(ctx context.Context) (Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.update(ctx, s.scan)
}

// UpdatePaths scans only the given paths (as filesystem events name them:
// files or directories, existing or removed, in any set's directory) and
// publishes the documents. Its cost follows the size of those paths, not
// of the collection (see scan.Scanner.ScanPaths); paths outside every
// set's directory are ignored.
func (s *Source) UpdatePaths(ctx context.Context, paths []string) (Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.update(ctx, func(ctx context.Context) (map[string]scan.Stats, error) {
		return s.scanPaths(ctx, paths)
	})
}

// ScanPaths is UpdatePaths without publishing: the changes of the paths
// are recorded in the journal at once, and published (and notified) by the
// next Update, UpdatePaths or Render. A harvester that commits many small
// batches journals each batch at once and publishes every few seconds.
func (s *Source) ScanPaths(ctx context.Context, paths []string) (map[string]scan.Stats, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scanPaths(ctx, paths)
}

func (s *Source) scanPaths(ctx context.Context, paths []string) (map[string]scan.Stats, error) {
	out := map[string]scan.Stats{}
	var refused []error
	for _, st := range s.sets {
		rels := st.relPaths(paths)
		if _, ok := st.leads(); !ok || len(rels) == 0 {
			continue
		}
		stats, err := st.scanner.ScanPaths(ctx, rels)
		out[st.name] = stats
		if err == nil {
			st.refused.Store(nil)
		}
		if err != nil {
			if errors.Is(err, scan.ErrEmptyRoot) && st.shared == nil {
				refused = append(refused, st.refusal(err))
				continue
			}
			return out, fmt.Errorf("scan of set %s: %w", st.name, err)
		}
	}
	return out, errors.Join(refused...)
}

// relPaths returns the slash-separated paths relative to the set's
// directory of those paths that lie in it.
func (st *set) relPaths(paths []string) []string {
	if st.content != nil {
		return nil // no local path lies in a Content: it is rescanned whole
	}
	var out []string
	for _, p := range paths {
		a, err := filepath.Abs(p)
		if err != nil {
			continue
		}
		rel, err := filepath.Rel(st.abs, a)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			continue
		}
		out = append(out, filepath.ToSlash(rel))
	}
	return out
}

func (s *Source) update(ctx context.Context, scanFn func(context.Context) (map[string]scan.Stats, error)) (Report, error) {
	return s.publish(ctx, scanFn, false)
}

// Render brings a replica's documents up to date with its shared stores
// without scanning: every set's documents are rendered from the meta its
// leader (maybe this process) recorded, which costs nothing for a set whose
// meta did not change since this process last wrote or rendered it (see
// publish.Set.Follow). A set whose report says Behind is to be rendered
// again later. Without shared stores it is Update without the scan.
func (s *Source) Render(ctx context.Context) (Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.publish(ctx, func(context.Context) (map[string]scan.Stats, error) { return nil, nil }, s.shared)
}

func (s *Source) publish(ctx context.Context, scanFn func(context.Context) (map[string]scan.Stats, error), follow bool) (Report, error) {
	if s.shared {
		// Stop writing at once when a scanner role is lost: the update
		// ends with the context of every role it holds.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		for _, st := range s.sets {
			if lctx, ok := st.leads(); ok {
				defer context.AfterFunc(lctx, cancel)()
			}
		}
	}
	before := map[string]uint64{}
	for _, st := range s.sets {
		if !s.shared && st.notifiedOK {
			before[st.name] = st.notified // ScanPaths may have journaled since
			continue
		}
		if stt, err := st.st.Stats(ctx); err == nil {
			before[st.name] = stt.LastSeq
		}
	}
	scans, err := scanFn(ctx)
	rep := Report{Scans: scans}
	if err != nil && (s.shared || !Refused(err)) {
		return rep, err
	}
	// A refused set's scan changed nothing: the others are published,
	// and the refusal returned once they are.
	refused := err
	// The journal is durable: tell listeners (change notifications) now,
	// not after the documents are rewritten, which takes longer.
	if s.cfg.OnUpdate != nil {
		for _, st := range s.sets {
			if _, ok := st.leads(); !ok {
				continue // another process scanned: it notifies
			}
			stt, err := st.st.Stats(ctx)
			if err == nil && stt.LastSeq > before[st.name] {
				s.cfg.OnUpdate(ctx, st.name, st.st, before[st.name], stt.LastSeq)
			}
			if err == nil && !s.shared {
				st.notified, st.notifiedOK = stt.LastSeq, true
			}
		}
	}

	published := map[string]uint64{}
	if s.cfg.OnPublished != nil {
		for _, st := range s.sets {
			if _, ok := st.leads(); !ok {
				continue
			}
			if stt, err := st.st.Stats(ctx); err == nil {
				published[st.name] = stt.LastSeq
			}
		}
	}
	pc := s.publishConfig()
	for _, st := range s.sets {
		_, led := st.leads()
		pc.Sets = append(pc.Sets, publish.Set{Name: st.name, Store: st.st, Dir: st.dir, Content: st.content, ResourceBase: st.base, Follow: follow || !led})
	}
	pr, err := publish.Publish(ctx, pc)
	rep.Publish = pr
	if err != nil {
		return rep, errors.Join(err, refused)
	}
	for _, st := range s.sets {
		if to, ok := published[st.name]; ok {
			s.cfg.OnPublished(ctx, st.name, st.st, to)
		}
	}
	return rep, refused
}

// publishConfig is the publish.Config of the Source, without its sets.
func (s *Source) publishConfig() publish.Config {
	return publish.Config{
		BaseURL: s.cfg.BaseURL, Out: s.out, DumpsOnDemand: s.cfg.DumpsOnDemand,
		ChangeListPeriod: s.cfg.ChangeListPeriod, MaxEntries: s.cfg.MaxEntries, Dumps: s.cfg.Dumps, DumpPartBytes: s.cfg.DumpPartBytes,
		DumpInterval: s.cfg.DumpInterval, Archives: s.cfg.Archives, ArchivedResourceDumps: s.cfg.ArchivedDumps, Notification: s.cfg.Notification,
		OpenChangeList: s.cfg.OpenChangeList, Feeds: !s.cfg.NoFeeds, FeedPageSize: s.cfg.FeedPageSize, PlainSitemap: s.cfg.PlainSitemap,
		CapabilityLinks: s.cfg.CapabilityLinks,
		Now:             s.cfg.Now, Logger: s.log, Replicas: s.shared,
		// HTML companions are for static hosting (publish's OUT); serve
		// negotiates the HTML view of each document instead.
		NoCompanions: s.cfg.Out == "" || s.cfg.NoCompanions,
		// The tree in StateDir is served by this Source's own server
		// only, which answers a part's URL from its compressed file
		// (Resource List parts are most of the state's disk); a given
		// Out may be served by any web server and keeps plain files.
		GzipLists: s.cfg.Out == "",
	}
}

// dumpsHandler returns what serves the on-demand dump packages, or nil
// when there are none.
func (s *Source) dumpsHandler() func(w http.ResponseWriter, r *http.Request, rel string) bool {
	if !s.cfg.Dumps || !s.cfg.DumpsOnDemand || s.shared {
		return nil
	}
	pc := s.publishConfig()
	for _, st := range s.sets {
		pc.Sets = append(pc.Sets, publish.Set{Name: st.name, Store: st.st, Dir: st.dir, Content: st.content, ResourceBase: st.base})
	}
	d, err := publish.NewDumps(pc)
	if err != nil {
		s.log.Error("on-demand dumps not served", "err", err)
		return nil
	}
	return d.Serve
}

// Handler returns the HTTP handler serving the documents, the resources
// and the status page (BASE/.resourcesync/, see package source/status).
// extra are more handlers mounted under the base URL (server.Handler's
// Extra); when extra[".resourcesync/metrics"] is set the status page links
// to the metrics. It shows the subscribers of Config.StatusHub.
func (s *Source) Handler(extra map[string]http.Handler) http.Handler {
	h := &server.Handler{Docs: s.out, Mount: s.mount, Extra: extra, Logger: s.log, SandboxResources: s.cfg.SandboxResources, NoBulk: s.cfg.NoBulk, Dumps: s.dumpsHandler()}
	sc := status.Config{BaseURL: s.cfg.BaseURL, Docs: s.out, Logger: s.log, Now: s.cfg.Now}
	sc.Sections = s.cfg.StatusSections
	if s.cfg.StatusHub != nil {
		sc.Hub = s.cfg.StatusHub
	}
	if extra[".resourcesync/metrics"] != nil {
		sc.Metrics = s.cfg.BaseURL + ".resourcesync/metrics"
	}
	for _, st := range s.sets {
		h.Sets = append(h.Sets, server.Set{Prefix: st.prefix, Dir: st.dir, Content: st.content, Store: st.st, CapabilityList: s.CapabilityListURL(st.name)})
		ss := status.Set{Name: st.name, Store: st.st, ResourceBase: st.base, CapabilityList: s.CapabilityListURL(st.name), Problem: st.problem}
		if !s.cfg.NoFeeds && !s.shared {
			ss.Feeds = s.cfg.BaseURL + publish.FeedDir(st.name)
		}
		if s.cfg.Notification != nil {
			ss.Topic, sc.HubURL = s.cfg.Notification(st.name)
		}
		sc.Sets = append(sc.Sets, ss)
	}
	sh := status.New(sc)
	s.statusMu.Lock()
	s.status = append(s.status, sh)
	s.statusMu.Unlock()
	h.Status = sh
	return h
}

// ResourceBase returns the URL prefix of the resources of set.
func (s *Source) ResourceBase(set string) string {
	for _, st := range s.sets {
		if st.name == set {
			return st.base
		}
	}
	return ""
}

// SetDir returns the directory of set, or "".
func (s *Source) SetDir(set string) string {
	for _, st := range s.sets {
		if st.name == set {
			return st.dir
		}
	}
	return ""
}

// SetNames returns the names of the sets, in configuration order.
func (s *Source) SetNames() []string {
	var names []string
	for _, st := range s.sets {
		names = append(names, st.name)
	}
	return names
}

// Close closes every set's state (and stops the status pages' work).
func (s *Source) Close() error {
	s.statusMu.Lock()
	for _, sh := range s.status {
		sh.Close()
	}
	s.status = nil
	s.statusMu.Unlock()
	var errs []error
	for _, st := range s.sets {
		errs = append(errs, st.st.Close())
	}
	return errors.Join(errs...)
}
