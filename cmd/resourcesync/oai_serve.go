package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/destination"
	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/internal/httpserver"
	"github.com/resourcesync-go/resourcesync/oai/provider"
	"github.com/resourcesync-go/resourcesync/oai/provider/readstore"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/storeurl"
)

// oaiCommand groups the OAI-PMH commands.
// oaiServeDescription is the description --help shows; the long text is in the
// help topics (topics.go).
const oaiServeDescription = `Offers a collection published by serve or publish (DIR and its state), or a
mirror made by sync (--mirror), to OAI-PMH 2.0 harvesters: all six verbs,
every resource a record (oai_dc, and --metadata-format for XML resources),
deleted records kept.

Examples:
  resourcesync oai serve --base-url https://data.example.org/ ./data
  resourcesync oai serve --mirror --records ./mirror

See also: resourcesync help oai-pmh, state, connections.`

func oaiCommand() *cli.Command {
	return &cli.Command{
		Name:  "oai",
		Usage: "bridge OAI-PMH 2.0 and ResourceSync",
		Description: `Bridges OAI-PMH 2.0 and ResourceSync: serve --oai-pmh URL (and publish
--oai-pmh) harvest a repository into a Source; oai serve offers a Source,
or a mirror of one, to OAI-PMH harvesters.

Examples:
  resourcesync serve --oai-pmh https://repo.example.org/oai --state st ./records
  resourcesync oai serve --base-url https://data.example.org/ ./data

See also: resourcesync help oai-pmh.`,
		Commands: []*cli.Command{
			oaiServeCommand(),
		},
	}
}

// oaiServeHelp is oai serve's part of the help topic oai-pmh.
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
   DIR/.resourcesync, or --store URL; see help state): give the same
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
		UsageText:   "resourcesync oai serve [options] [DIR]",
		Description: oaiServeDescription,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Usage: "listen on `HOST:PORT`", Value: "127.0.0.1:8080"},
			&cli.StringFlag{Name: "base-url", Usage: "the Source's public base `URL`, as given to serve", DefaultText: "http://ADDR/"},
			&cli.StringFlag{Name: "endpoint-url", Usage: "public `URL` of this endpoint (Identify's baseURL)", DefaultText: "http://ADDR/"},
			&cli.StringFlag{Name: "state", Usage: "state directory of serve or publish", DefaultText: "DIR/.resourcesync"},
			storeFlag(),
			&cli.StringSliceFlag{Name: "set", Usage: "the set `NAME=DIR` (repeatable, as given to serve)", TakesFile: true},
			&cli.StringSliceFlag{Name: "metadata-format", Usage: "also offer `FORMAT` P=NS[=XSD] (repeatable)"},
			&cli.StringFlag{Name: "repository-name", Usage: "Identify's repositoryName", Value: "resourcesync"},
			&cli.StringSliceFlag{Name: "admin-email", Usage: "Identify's adminEmail (repeatable)", DefaultText: "nobody@HOST"},
			&cli.DurationFlag{Name: "token-ttl", Usage: "how long a resumption token stays valid", Value: 24 * time.Hour},
			&cli.IntFlag{Name: "page-size", Usage: "`N` records per ListRecords response", Value: 100},
			&cli.BoolFlag{Name: "mirror", Usage: "DIR is a mirror made by sync (help oai-pmh)"},
			&cli.BoolFlag{Name: "records", Usage: "DIR holds harvested records: serve each as itself"},
			&cli.DurationFlag{Name: "rescan-interval", Usage: "with --mirror: rescan the mirror every `D`", Value: time.Minute},
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
	if u := cmd.String("store"); u != "" {
		if _, err := storeurl.Parse(u); err != nil {
			return cli.Exit(fmt.Sprintf("--store %q: want bolt:PATH or postgres://...", redactURL(u)), exitUsage)
		}
	}
	stateDir := cmd.String("state")
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
		st, err := openOAIState(ctx, cmd.String("store"), stateDir, s.name)
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

// openOAIState opens the state of set for oai serve, read-only: the one
// place where oai serve chooses the kind of state. A store URL (--store)
// opens as serve and publish open it (bolt:DIR being the embedded state
// in DIR, whatever --state says); without one, the embedded state in
// stateDir. The embedded state is never created here (an absent state is
// a mistake) and is opened for each request only, so that publish can
// update it meanwhile (package oai/provider/readstore).
func openOAIState(ctx context.Context, storeURL, stateDir, set string) (store.Store, error) {
	if storeURL != "" {
		su, err := storeurl.Parse(storeURL)
		if err != nil {
			return nil, err
		}
		if !su.Embedded() {
			return su.Open(ctx, set)
		}
		stateDir = su.Dir
	}
	st, err := readstore.Open(stateDir, set)
	if errors.Is(err, readstore.ErrNoState) {
		return nil, fmt.Errorf("%w (run publish or serve on the directory first, with the same --state/--set)", err)
	}
	return st, err
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
		NoFeeds: true,
		Logger:  commandLogger(cmd, cmd.Root().ErrWriter, slog.LevelWarn),
	}
	src, err := source.Open(cfg)
	if err != nil {
		return cli.Exit(err.Error()+lockedHint(err), exitUsage)
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
		&cli.StringFlag{Name: "oai-pmh-endpoint", Usage: "also answer OAI-PMH at BASE/`PATH` (help oai-pmh)"},
		&cli.StringSliceFlag{Name: "oai-metadata-format", Usage: "with --oai-pmh-endpoint: offer `FMT` P=NS[=XSD]"},
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
