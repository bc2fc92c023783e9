package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/internal/httpserver"
	"github.com/resourcesync-go/resourcesync/oai/provider"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/bolt"
	"github.com/resourcesync-go/resourcesync/source/store/storeurl"
)

// oaiCommand groups the OAI-PMH commands.
func oaiCommand() *cli.Command {
	return &cli.Command{
		Name:  "oai",
		Usage: "bridge OAI-PMH 2.0 and ResourceSync",
		Commands: []*cli.Command{
			oaiServeCommand(),
		},
	}
}

const oaiServeHelp = `Offers a collection published by serve or publish (DIR and its state) to
OAI-PMH 2.0 harvesters: all six verbs, over GET and POST, at second
granularity, with persistent deleted records.

RECORDS
   Every resource is one record, its identifier oai:HOST:PATH where HOST is
   --base-url's host name and PATH the resource's URL path under --base-url
   as escaped in that URL (oai:example.org:dir/a%20b.xml). With several sets
   (--set NAME=DIR) PATH begins with NAME/ and each set is an OAI set (setSpec
   NAME); with one, the repository has no sets (ListSets: noSetHierarchy).
   Metadata formats:
   - oai_dc, for every resource: dc:identifier its URL, dc:title its path,
     dc:date its lastmod, dc:format its media type and "N bytes".
   - each --metadata-format PREFIX=NAMESPACE[=SCHEMA-URL]: the UTF-8 XML
     resources whose root element is in NAMESPACE, served as that format's
     records (the file from its root element on: no XML declaration, no
     doctype). ListMetadataFormats with an identifier names the formats
     that resource has.
   A record's datestamp is when its last change was recorded in the
   journal (or by the first scan), not the file's mtime: a harvest with from
   set to the previous harvest's responseDate gets every change since,
   including files copied in with an old mtime. A deleted resource stays a
   deleted record (status="deleted") with the datestamp of its deletion.
   Resumption tokens (about 100 records, 500 identifiers a page) carry the
   position and the arguments, signed; they expire after --token-ttl
   (expirationDate) and survive restarts. Memory does not grow with the
   collection.

STATE
   The state is that of serve and publish (--state DIR, default
   DIR/.resourcesync, or --store URL; see serve --help): give the same
   --state, --store, --set and --base-url they were given. The records are
   the state as publish last recorded it: run publish again (while oai serve
   runs) to update them. The embedded store admits one process at a time:
   oai serve opens it for each request only (waiting up to 30 s for a
   publish to finish). serve holds it as long as it runs: to offer OAI-PMH
   from a serve, give serve --oai-pmh-endpoint PATH instead (the same
   provider inside serve).

HARVESTED RECORDS (--records)
   With --records, DIR holds the records serve --oai-pmh (or publish
   --oai-pmh) harvested, PREFIX/HH/IDENTIFIER.xml, or a mirror of them
   (with --mirror): each file is served as the record of its own identifier
   in its own format, its bytes unchanged (oai_dc is not generated; give
   --metadata-format for the other prefixes), so a harvester gets the
   repository's records back: repository -> serve --oai-pmh -> sync ->
   oai serve --mirror --records -> harvester. Other files are left out;
   datestamps are when this side recorded the record's change.

MIRRORS (--mirror)
   With --mirror, DIR is a mirror made by sync (DEST): its files are offered
   with the identifiers and URLs of the Source it mirrors (--base-url defaults
   to that Source's base URL, as the mirror's state recorded it), so a
   harvester gets from the mirror the records it gets from the Source. oai
   serve keeps its own journal of the mirror (in --state, default
   DEST/.resourcesync/oai-pmh): the mirror is scanned at start and every
   --rescan-interval, and a record's datestamp is when that scan found its
   change (never earlier than when it became visible here, so incremental
   harvests miss nothing); files sync deletes become deleted records. sync
   may run (also with --follow) while oai serve does. The mirror's sets are
   directories here (no OAI sets).

URLS
   --endpoint-url (default http://ADDR/) is the endpoint's public URL, the
   baseURL harvesters are given; the server answers OAI-PMH on every path.

EXAMPLES
   resourcesync publish --base-url https://data.example.org/ --out OUT DIR
   resourcesync oai serve --base-url https://data.example.org/ \
       --metadata-format mods=http://www.loc.gov/mods/v3=http://www.loc.gov/standards/mods/v3/mods-3-7.xsd DIR
   oai_pmh --verbose --metadataPrefix oai_dc http://127.0.0.1:8080/`

func oaiServeCommand() *cli.Command {
	return &cli.Command{
		Name:        "serve",
		Usage:       "offer a published collection to OAI-PMH harvesters",
		UsageText:   "resourcesync oai serve [--addr HOST:PORT] [--base-url URL] [--endpoint-url URL] [--state DIR | --store URL] [--set NAME=DIR]... [--mirror] [--records] [--metadata-format PREFIX=NAMESPACE[=SCHEMA]]... [DIR]",
		Description: oaiServeHelp + storeHelp + connsHelp(bodyWithin(time.Minute)) + hostGuardHelp("--endpoint-url"),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Usage: "address to listen on", Value: "127.0.0.1:8080"},
			&cli.StringFlag{Name: "base-url", Usage: "the Source's public base URL, as given to serve or publish (resource URLs, identifiers)", DefaultText: "http://ADDR/"},
			&cli.StringFlag{Name: "endpoint-url", Usage: "public URL of this OAI-PMH endpoint (Identify's baseURL)", DefaultText: "http://ADDR/"},
			&cli.StringFlag{Name: "state", Usage: "state directory of serve or publish", DefaultText: "DIR/.resourcesync"},
			storeFlag(),
			&cli.StringSliceFlag{Name: "set", Usage: "the set NAME published from DIR (repeatable, as given to serve or publish)", TakesFile: true},
			&cli.StringSliceFlag{Name: "metadata-format", Usage: "also offer the XML resources whose root is in NAMESPACE as format PREFIX (`PREFIX=NAMESPACE[=SCHEMA]`, repeatable)"},
			&cli.StringFlag{Name: "repository-name", Usage: "Identify's repositoryName", Value: "resourcesync"},
			&cli.StringSliceFlag{Name: "admin-email", Usage: "Identify's adminEmail (repeatable)", DefaultText: "nobody@HOST"},
			&cli.DurationFlag{Name: "token-ttl", Usage: "how long a resumption token stays valid", Value: 24 * time.Hour},
			&cli.IntFlag{Name: "page-size", Usage: "records per ListRecords response (ListIdentifiers: 5 times as many headers)", Value: 100},
			&cli.BoolFlag{Name: "mirror", Usage: "DIR is a mirror made by sync (see MIRRORS above)"},
			&cli.BoolFlag{Name: "records", Usage: "DIR holds OAI-PMH records as serve --oai-pmh harvests them: serve each as itself (see HARVESTED RECORDS above)"},
			&cli.DurationFlag{Name: "rescan-interval", Usage: "with --mirror: look for changes in the mirror at this interval", Value: time.Minute},
			maxConnsFlag(),
		},
		Action: oaiServe,
	}
}

func oaiServe(ctx context.Context, cmd *cli.Command) error {
	type setArg struct{ name, dir string }
	var sets []setArg
	for _, s := range cmd.StringSlice("set") {
		name, dir, ok := strings.Cut(s, "=")
		if !ok || name == "" || dir == "" {
			return cli.Exit(fmt.Sprintf("--set %q: want NAME=DIR", s), exitUsage)
		}
		sets = append(sets, setArg{name, dir})
	}
	if cmd.NArg() > 1 {
		return usageError(cmd, "at most one DIR (use --set NAME=DIR for several)")
	}
	if d := cmd.Args().First(); d != "" {
		sets = append(sets, setArg{"default", d})
	}
	if len(sets) == 0 {
		return usageError(cmd, "no directory: give DIR or --set NAME=DIR")
	}
	if cmd.Bool("mirror") && (len(sets) != 1 || sets[0].name != "default" || cmd.IsSet("store")) {
		return usageError(cmd, "--mirror takes one DEST and no --set or --store")
	}
	var formats []provider.Format
	for _, s := range cmd.StringSlice("metadata-format") {
		f, err := provider.ParseFormat(s)
		if err != nil {
			return cli.Exit("--metadata-format: "+err.Error(), exitUsage)
		}
		formats = append(formats, f)
	}
	ln, err := net.Listen("tcp", cmd.String("addr"))
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	defer ln.Close()
	base := cmd.String("base-url")
	if base == "" && cmd.Bool("mirror") {
		b, err := destination.MirrorBase(sets[0].dir)
		if err != nil {
			return cli.Exit(fmt.Sprintf("--mirror %s: %v (give --base-url)", sets[0].dir, err), exitUsage)
		}
		if b == "" {
			return cli.Exit(fmt.Sprintf("--mirror %s: not a mirror made by sync, or nothing synced yet (give --base-url)", sets[0].dir), exitUsage)
		}
		base = b
	}
	if base == "" {
		base = "http://" + ln.Addr().String() + "/"
	}
	if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return cli.Exit(fmt.Sprintf("--base-url %q: want an absolute http(s) URL", base), exitUsage)
	} else if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
		base = u.String()
	}
	endpoint := cmd.String("endpoint-url")
	if endpoint == "" {
		endpoint = "http://" + ln.Addr().String() + "/"
	}
	if cmd.Bool("mirror") {
		return oaiServeMirror(ctx, cmd, ln, sets[0].dir, base, endpoint, formats)
	}
	// Which stores: as serve and publish open them (bolt:STATE/SET or a
	// database), but never created here: an absent state is a mistake.
	stateDir := cmd.String("state")
	open := func(ctx context.Context, set string) (store.Store, error) {
		p := filepath.Join(stateDir, set, "state.db")
		if _, err := os.Stat(p); err != nil {
			return nil, fmt.Errorf("no state at %s (run publish or serve on the directory first, with the same --state/--set): %w", p, err)
		}
		// Opened for each request: publish may update it meanwhile. Once
		// now, to report a state that cannot be used before serving it.
		st := newOnDemandStore(stateDir, set)
		db, err := bolt.OpenSet(stateDir, set, &bolt.Options{LockTimeout: 5 * time.Second, ReadOnly: true})
		if err != nil {
			return nil, err
		}
		return st, db.Close()
	}
	if u := cmd.String("store"); u != "" {
		su, err := storeurl.Parse(u)
		if err != nil {
			return cli.Exit(fmt.Sprintf("--store %q: want bolt:PATH or postgres://...", redactURL(u)), exitUsage)
		}
		if su.Postgres() {
			open = su.Open
		} else {
			stateDir = su.Dir // the store's directory, whatever --state says
		}
	}
	if stateDir == "" {
		stateDir = filepath.Join(sets[0].dir, ".resourcesync")
	}
	var ss []provider.StoreSet
	defer func() {
		for _, s := range ss {
			s.Store.Close()
		}
	}()
	for _, s := range sets {
		if fi, err := os.Stat(s.dir); err != nil || !fi.IsDir() {
			return cli.Exit(fmt.Sprintf("set %s: %s is not a directory", s.name, s.dir), exitUsage)
		}
		st, err := open(ctx, s.name)
		if errors.Is(err, store.ErrLocked) {
			return cli.Exit(fmt.Sprintf("set %s: %v: a serve or publish is using this state; run serve --oai-pmh-endpoint PATH to offer OAI-PMH from that serve", s.name, err), exitUsage)
		}
		if err != nil {
			msg := fmt.Sprintf("set %s: %v", s.name, err)
			if _, serr := os.Stat(filepath.Join(s.dir, destination.StateDirName, "state.db")); serr == nil && len(sets) == 1 {
				// A sync's state: DIR is a mirror, which has no Source state.
				msg += fmt.Sprintf("\n%s is a mirror made by sync: serve it with 'oai serve --mirror --records %s' (--records when its Source harvests an OAI-PMH repository; --mirror alone offers every file as oai_dc)", s.dir, s.dir)
			}
			return cli.Exit(msg, exitUsage)
		}
		rb := base
		if len(sets) > 1 {
			rb += s.name + "/"
		}
		ss = append(ss, provider.StoreSet{Name: s.name, Dir: s.dir, Store: st, Base: rb})
	}
	h, err := oaiHandler(ss, base, endpoint, formats, cmd.Bool("records"), cmd)
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	return serveOAI(ctx, cmd, ln, h, base, endpoint)
}

// serveOAI serves h on ln until ctx is done.
func serveOAI(ctx context.Context, cmd *cli.Command, ln net.Listener, h http.Handler, base, endpoint string) error {
	o := serverOptions(cmd, httpserver.Options{ReadTimeout: time.Minute})
	if u, err := url.Parse(endpoint); err == nil && u.Host != "" {
		o.PublicHosts = append(o.PublicHosts, u.Host)
	}
	srv := httpserver.New(h, o)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(cmd.Root().Writer, "serving OAI-PMH at %s (resources under %s)\n", endpoint, base)
	var serveErr error
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			serveErr = cli.Exit(err.Error(), exitUsage)
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	return serveErr
}

// oaiServeMirror serves a mirror: a Source of its own over DEST, scanned
// at start and every --rescan-interval, whose journal gives the
// datestamps and the deletions.
func oaiServeMirror(ctx context.Context, cmd *cli.Command, ln net.Listener, dest, base, endpoint string, formats []provider.Format) error {
	state := cmd.String("state")
	if state == "" {
		state = filepath.Join(dest, destination.StateDirName, "oai-pmh")
	}
	cfg := source.Config{
		BaseURL:  base,
		StateDir: state,
		Sets:     []source.SetConfig{{Name: "default", Dir: dest}},
		// The mirror's own state, and the files sync is writing.
		Exclude: []string{filepath.Join(dest, destination.StateDirName)},
		Skip:    []string{fetch.TempPrefix + "*"},
		Logger:  commandLogger(cmd, cmd.Root().ErrWriter, slog.LevelWarn),
	}
	src, err := source.Open(cfg)
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	defer src.Close()
	if _, err := src.Update(ctx); err != nil && !source.Refused(err) {
		return cli.Exit(err.Error(), exitUsage)
	}
	h, err := sourceOAIHandler(src, endpoint, formats, cmd.Bool("records"), cmd)
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		src.Run(runCtx, source.RunOptions{RescanInterval: cmd.Duration("rescan-interval")})
	}()
	err = serveOAI(ctx, cmd, ln, h, base, endpoint)
	cancel()
	<-done
	return err
}

// oaiHandler builds the provider over a Source's sets; shared by oai
// serve and serve --oai-pmh-endpoint.
func oaiHandler(ss []provider.StoreSet, base, endpoint string, formats []provider.Format, records bool, cmd *cli.Command) (*provider.Handler, error) {
	var c provider.Collection
	var err error
	if records {
		if len(ss) != 1 {
			return nil, errors.New("--records: one directory of records, no --set")
		}
		c, err = provider.NewStoreRecords(ss[0])
	} else {
		c, err = provider.NewStoreCollection(ss)
	}
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	cfg := provider.Config{BaseURL: endpoint, RepositoryIdentifier: u.Hostname(), Formats: formats}
	for _, f := range cmd.Flags {
		switch f.Names()[0] {
		case "repository-name":
			cfg.RepositoryName = cmd.String("repository-name")
		case "admin-email":
			cfg.AdminEmails = cmd.StringSlice("admin-email")
		case "token-ttl":
			cfg.TokenTTL = cmd.Duration("token-ttl")
		case "page-size":
			cfg.PageSize = int(cmd.Int("page-size"))
		}
	}
	return provider.New(c, cfg)
}

// sourceOAIHandler is oaiHandler over a running Source's sets.
func sourceOAIHandler(src *source.Source, endpoint string, formats []provider.Format, records bool, cmd *cli.Command) (*provider.Handler, error) {
	var ss []provider.StoreSet
	for _, name := range src.SetNames() {
		ss = append(ss, provider.StoreSet{Name: name, Dir: src.SetDir(name), Store: src.Store(name), Base: src.ResourceBase(name)})
	}
	return oaiHandler(ss, src.BaseURL(), endpoint, formats, records, cmd)
}

// withOAIEndpoint adds serve's flags for the provider inside it
// (mounted by mountOAI).
func withOAIEndpoint(serve *cli.Command) *cli.Command {
	serve.Flags = append(serve.Flags, oaiEndpointFlags()...)
	return serve
}

// oaiEndpointFlags are serve's flags for the provider inside it.
func oaiEndpointFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "oai-pmh-endpoint", Usage: "also answer OAI-PMH 2.0 at BASE/`PATH` over the served sets (see resourcesync oai serve --help)"},
		&cli.StringSliceFlag{Name: "oai-metadata-format", Usage: "with --oai-pmh-endpoint: offer the XML resources whose root is in NAMESPACE as format PREFIX (`PREFIX=NAMESPACE[=SCHEMA]`, repeatable)"},
	}
}

// mountOAI adds serve's --oai-pmh-endpoint to extra (nil when not given).
func mountOAI(cmd *cli.Command, src *source.Source, extra map[string]http.Handler) (map[string]http.Handler, error) {
	p := strings.Trim(cmd.String("oai-pmh-endpoint"), "/")
	if p == "" {
		return extra, nil
	}
	var formats []provider.Format
	for _, s := range cmd.StringSlice("oai-metadata-format") {
		f, err := provider.ParseFormat(s)
		if err != nil {
			return nil, cli.Exit("--oai-metadata-format: "+err.Error(), exitUsage)
		}
		formats = append(formats, f)
	}
	// A serve --oai-pmh (a repository's harvested records) offers them
	// as themselves.
	h, err := sourceOAIHandler(src, src.BaseURL()+p, formats, cmd.String("oai-pmh") != "", cmd)
	if err != nil {
		return nil, cli.Exit("--oai-pmh-endpoint: "+err.Error(), exitUsage)
	}
	if extra == nil {
		extra = map[string]http.Handler{}
	}
	extra[p] = h
	return extra, nil
}

// onDemandStore is a read-only store.Store over the embedded state of
// publish (or serve): the state is opened (read-only: no write, no fsync)
// when a request needs it and closed when no request does, so that the
// writer can update it between requests: the embedded store admits one
// writer and no reader beside it.
//
// The requests in flight share one open, and it is never held longer
// than oaiHoldMax at a stretch: harvesters whose requests overlap would
// otherwise keep the shared lock for ever, and the writer, which polls for
// its exclusive lock (every 50 ms, bbolt) and gives up after a second
// (publish: the state is locked), would never get it. Past oaiHoldMax new
// requests wait, the ones in flight finish, the state is closed, and it
// stays closed for oaiPause, twice the writer's poll interval, so that a
// waiting writer's poll lands in the gap. A writer thus waits at most
// oaiHoldMax plus the longest request in flight plus one poll; the
// harvesters, at most that pause (then the writer's run, up to lockWait).
type onDemandStore struct {
	dir, set string

	mu       sync.Mutex
	cond     *sync.Cond
	db       *bolt.DB // the open shared by the requests in flight
	refs     int
	busy     time.Time // opened since then with no gap of oaiPause
	closed   time.Time // last closed then
	draining time.Time // held oaiHoldMax since then: no new request until it is closed
	resume   time.Time // closed for a writer until then
}

const (
	oaiHoldMax = 250 * time.Millisecond
	oaiPause   = 100 * time.Millisecond
	// oaiDrainMax bounds the wait for the requests in flight: past it, a
	// new request joins them. The provider never nests its calls on a
	// store, but should a request wait for its own release, it is delayed,
	// not deadlocked.
	oaiDrainMax = time.Second
)

func newOnDemandStore(dir, set string) *onDemandStore {
	s := &onDemandStore{dir: dir, set: set}
	s.cond = sync.NewCond(&s.mu)
	return s
}

var errReadOnly = errors.New("oai serve: the state is read-only here")

// lockWait is how long a call waits for publish to release the state.
const lockWait = 30 * time.Second

func (s *onDemandStore) open() (*bolt.DB, error) {
	return bolt.OpenSet(s.dir, s.set, &bolt.Options{LockTimeout: lockWait, ReadOnly: true})
}

// acquire returns the state, open, for one request; release gives it back.
func (s *onDemandStore) acquire() (*bolt.DB, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		now := time.Now()
		if s.db != nil && s.draining.IsZero() && now.Sub(s.busy) >= oaiHoldMax {
			s.draining = now
		}
		switch {
		case s.db != nil && (s.draining.IsZero() || now.Sub(s.draining) >= oaiDrainMax):
			if !s.draining.IsZero() {
				// A request outlived the drain: the others join it, and
				// the next drain is tried after another oaiHoldMax.
				s.draining, s.busy = time.Time{}, now
			}
			s.refs++
			return s.db, nil
		case s.db == nil && !now.Before(s.resume):
			// Opened with s.mu held: the other requests would wait for
			// the lock anyway.
			db, err := s.open()
			if err != nil {
				return nil, err
			}
			s.db, s.refs = db, 1
			if now.Sub(s.closed) >= oaiPause {
				s.busy = now // a writer had its chance
			}
			return db, nil
		default:
			// The pause, or the drain: woken when the pause ends, the
			// drain is too long (the timer takes s.mu, so its Broadcast
			// cannot come before this Wait) or the last request ends.
			until := s.resume
			if s.db != nil {
				until = s.draining.Add(oaiDrainMax)
			}
			tm := time.AfterFunc(until.Sub(now), func() {
				s.mu.Lock()
				s.cond.Broadcast()
				s.mu.Unlock()
			})
			s.cond.Wait()
			tm.Stop()
		}
	}
}

func (s *onDemandStore) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refs--; s.refs > 0 {
		return
	}
	s.db.Close()
	s.db, s.closed = nil, time.Now()
	if !s.draining.IsZero() {
		s.draining = time.Time{}
		s.resume = time.Now().Add(oaiPause)
	}
	s.cond.Broadcast()
}

func (s *onDemandStore) Apply(context.Context, store.Batch) (uint64, uint64, error) {
	return 0, 0, errReadOnly
}

func (s *onDemandStore) PutMeta(context.Context, string, []byte) error { return errReadOnly }

func (s *onDemandStore) Close() error { return nil }

func (s *onDemandStore) Get(ctx context.Context, path string) (store.Resource, error) {
	db, err := s.acquire()
	if err != nil {
		return store.Resource{}, err
	}
	defer s.release()
	return db.Get(ctx, path)
}

func (s *onDemandStore) Stats(ctx context.Context) (store.Stats, error) {
	db, err := s.acquire()
	if err != nil {
		return store.Stats{}, err
	}
	defer s.release()
	return db.Stats(ctx)
}

func (s *onDemandStore) GetMeta(ctx context.Context, key string) ([]byte, error) {
	db, err := s.acquire()
	if err != nil {
		return nil, err
	}
	defer s.release()
	return db.GetMeta(ctx, key)
}

// each runs one iteration of db's with the state open.
func onDemandSeq[T any](s *onDemandStore, seq func(*bolt.DB) iter.Seq2[T, error]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		db, err := s.acquire()
		if err != nil {
			var zero T
			yield(zero, err)
			return
		}
		defer s.release()
		for v, err := range seq(db) {
			if !yield(v, err) {
				return
			}
		}
	}
}

func (s *onDemandStore) Resources(ctx context.Context) iter.Seq2[store.Resource, error] {
	return onDemandSeq(s, func(db *bolt.DB) iter.Seq2[store.Resource, error] { return db.Resources(ctx) })
}

func (s *onDemandStore) ResourcesIn(ctx context.Context, from, to string) iter.Seq2[store.Resource, error] {
	return onDemandSeq(s, func(db *bolt.DB) iter.Seq2[store.Resource, error] { return db.ResourcesIn(ctx, from, to) })
}

func (s *onDemandStore) Journal(ctx context.Context, from uint64) iter.Seq2[store.Change, error] {
	return onDemandSeq(s, func(db *bolt.DB) iter.Seq2[store.Change, error] { return db.Journal(ctx, from) })
}

func (s *onDemandStore) JournalBetween(ctx context.Context, from, until time.Time) iter.Seq2[store.Change, error] {
	return onDemandSeq(s, func(db *bolt.DB) iter.Seq2[store.Change, error] { return db.JournalBetween(ctx, from, until) })
}
