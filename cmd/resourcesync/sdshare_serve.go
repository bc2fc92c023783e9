package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/internal/httpclient"
	"github.com/resourcesync-go/resourcesync/internal/httpserver"
	"github.com/resourcesync-go/resourcesync/sdshare/server"
	"github.com/resourcesync-go/resourcesync/source/notify"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/source/store/storeurl"
)

// sdshareServeHelp is the help topic sdshare-feeds.
const sdshareServeHelp = `Publishes each collection NAME, the RDF graph in PATH (a file, or a directory
of files: .nt N-Triples, .ttl Turtle, .rdf/.xml/.owl RDF/XML), as SDShare 1.0
feeds, and keeps them current: a change to the files is picked up within
about two seconds (filesystem events, debounced, with a stat-based rescan
every --rescan as fallback). A file that does not parse is reported and the
last good graph stays served, so a syntax error never publishes deletions.
A symbolic link inside a directory is not followed (nor published); it is
logged, and /healthz says "degraded" with a count (never a path or error).
A fragment's blank nodes are labelled canonically once per change (at load,
never per request), at most --max-canonical-steps of work each, and a load
that much plus 64 steps a triple for all; a fragment beyond either is
served with its labels as loaded (stable while the file is, but a rewrite
with other labels reports it updated), logged, and counted on /healthz
("degraded") and in the metrics.

URLS (B is --base-url)
   B                                        overview feed: one entry per collection
   B NAME/                                  collection feed: snapshots and fragments
   B NAME/snapshots                         snapshots feed: the current snapshot
   B NAME/snapshot/KEY                      snapshot data (202 + Retry-After while
                                            it is being built)
   B NAME/snapshot/KEY/chunks               chunked snapshot feed (more than
                                            --chunk-size resources), chunk/I its parts
   B NAME/fragments[?since=T]               fragments feed: one entry per created,
                                            updated or deleted resource, since
                                            inclusive, RFC 5005 next paging
   B NAME/fragment?resource=IRI             a resource's fragment (its statements and
                                            their blank-node closure; empty if deleted)
   B healthz, B metrics                     health text, Prometheus metrics

FORMATS
   Data URLs negotiate by Accept: N-Triples (application/n-triples, also the
   answer to no Accept or */*; text/plain is answered as text/plain), Turtle
   (text/turtle), RDF/XML (application/rdf+xml); anything else gets 406.
   ?format=nt|txt|ttl|rdf pins one; the feeds link every format.
   A browser's navigation (or ?format=html) gets every feed as an HTML page
   from the same URL (links to the other feeds and to each fragment, paging,
   no script); every other client gets the Atom, Java's default Accept
   ("text/html, ..., */*; q=.2") included (Vary: Accept, Sec-Fetch-Dest,
   Sec-Fetch-Mode, Upgrade-Insecure-Requests).

STATE
   --state DIR holds one state file per collection (the inventory of its
   resources with a hash of each fragment, and the change journal), the
   snapshot files, and NAME.graph/: the graph, indexed on disk (about twice
   the size of its N-Triples; rebuilt at every start), from which fragments
   and snapshots are read, so memory stays about the same whatever the
   collection's size. A change to a directory collection reads the changed
   files only and compares their resources only. The first load of a collection is its baseline: its
   fragments feed starts empty. Restarting resumes the journal; changes made
   while the server was down are journaled at start. Timestamps never go
   backwards.
   --store postgres://USER@HOST:PORT/DB (or $RESOURCESYNC_SDSHARE_STORE)
   keeps the inventories and journals in PostgreSQL instead (collection
   NAME is the set sdshare.NAME; the schema is that of serve --store),
   while the snapshot files stay in --state. One server writes a
   collection at a time: a second one waits up to 30 s, then exits 2.
   --store bolt:DIR is the embedded store, the same as --state DIR.

PUSH
   --push URL (repeatable) sends every change of every collection to an
   SDShare Push receiver: POST URL?resource=IRI&graph=COLLECTION-URL with the
   fragment as N-Triples (empty body: deleted), in journal order, retried with
   backoff until the receiver answers 2xx. Each receiver's position is kept
   in the state, so a restart resumes without loss (a change may be sent
   twice, which receivers treat idempotently).
   A receiver that requires a token (sdshare receive --auth-token-file) gets
   it from --push-token-file FILE (or $RESOURCESYNC_PUSH_TOKEN) as
   "Authorization: Bearer", sent to the origins of the --push URLs only
   (never across a redirect to another origin); user:password@ in a --push
   URL is sent as HTTP basic to that origin and printed nowhere.

RESOURCESYNC
   --resourcesync also publishes every collection as a ResourceSync Source
   from the same state: B .well-known/resourcesync, B .resourcesync/NAME/
   (Capability List, Resource List, Change Lists from the same change
   journal), and each resource's fragment (canonical N-Triples, whose
   sha-256 and length the lists carry) at B NAME/rs/IRI. A ResourceSync
   Destination (resourcesync sync) can so mirror an SDShare collection.
   --hub URL also publishes ResourceSync Change Notifications of every change
   to that WebSub hub (topic B .resourcesync/NAME/notifications).`

// sdshareServeDescription is the description --help shows; the long text is in the
// help topics (topics.go).
const sdshareServeDescription = `Publishes each collection NAME, the RDF graph in PATH (a file or a directory
of .nt, .ttl, .rdf files), as SDShare 1.0 feeds kept current as the files
change; --push sends each change on, --resourcesync makes a Source of it.

Examples:
  resourcesync sdshare serve people=./people.ttl places=./places/
  resourcesync sdshare serve --push http://127.0.0.1:8950/ people=./people.nt

See also: resourcesync help sdshare-feeds, authentication,
connections.`

func sdshareServeCommand() *cli.Command {
	return &cli.Command{
		Name:        "serve",
		Usage:       "publish RDF files as SDShare feeds (and push their changes)",
		UsageText:   "resourcesync sdshare serve [options] NAME=PATH...",
		Description: sdshareServeDescription,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "addr", Usage: "listen on `HOST:PORT`", Value: "127.0.0.1:8080"},
			maxConnsFlag(),
			&cli.StringFlag{Name: "base-url", Usage: "public `URL` of the overview feed", DefaultText: "http://ADDR/"},
			&cli.StringFlag{Name: "state", Usage: "state `DIR` (journal, snapshots, push positions)", Value: "sdshare-state"},
			&cli.StringFlag{Name: "store", Usage: "state store `URL`: bolt:DIR or postgres://...", DefaultText: "bolt:STATE", Sources: cli.EnvVars("RESOURCESYNC_SDSHARE_STORE")},
			&cli.StringSliceFlag{Name: "push", Usage: "SDShare Push receiver `URL` (repeatable)"},
			&cli.StringFlag{Name: "push-token-file", Usage: "send the token in `FILE` to --push (or $" + envPushToken + ")"},
			&cli.DurationFlag{Name: "rescan", Usage: "stat-based rescan every `D` (0: events only)", Value: server.DefaultRescan},
			&cli.DurationFlag{Name: "debounce", Usage: "reload once file events are quiet for `D`", Value: server.DefaultDebounce},
			&cli.IntFlag{Name: "page-size", Usage: "`N` entries per fragments feed page", Value: server.DefaultPageSize},
			&cli.IntFlag{Name: "chunk-size", Usage: "`N` resources per chunk of a chunked snapshot", Value: server.DefaultChunkSize},
			&cli.StringFlag{Name: "author", Usage: "atom:author `NAME` of the feeds", Value: server.DefaultAuthor},
			&cli.IntFlag{Name: "max-canonical-steps", Usage: "work `N` to label a fragment's blank nodes", Value: server.DefaultCanonicalSteps},
			&cli.BoolFlag{Name: "resourcesync", Usage: "also publish the collections by ResourceSync"},
			&cli.StringFlag{Name: "hub", Usage: "with --resourcesync: notify the WebSub hub at `URL`"},
			&cli.StringFlag{Name: "hub-token", Usage: "bearer `TOKEN` sent to the --hub with each publish"},
			&cli.BoolFlag{Name: "verbose", Usage: "log every reload and push failure"},
		}, serverAuthFlags(true)...),
		Action: sdshareServe,
	}
}

func sdshareServe(ctx context.Context, cmd *cli.Command) error {
	if cmd.NArg() == 0 {
		return usageError(cmd, "give at least one collection as NAME=PATH")
	}
	var cols []server.CollectionConfig
	for _, a := range cmd.Args().Slice() {
		name, path, ok := strings.Cut(a, "=")
		if !ok || name == "" || path == "" {
			return cli.Exit(fmt.Sprintf("collection %q: want NAME=PATH", a), exitUsage)
		}
		cols = append(cols, server.CollectionConfig{Name: name, Path: path})
	}
	ln, err := net.Listen("tcp", cmd.String("addr"))
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	defer ln.Close()
	base := cmd.String("base-url")
	if base == "" {
		base = "http://" + ln.Addr().String() + "/"
	}
	rescan := cmd.Duration("rescan")
	if rescan == 0 {
		rescan = -1
	}
	var notifier *notify.Notifier
	if h := cmd.String("hub"); h != "" {
		if !cmd.Bool("resourcesync") {
			return cli.Exit("--hub needs --resourcesync", exitUsage)
		}
		h, hc, err := hubPublisher(h, cmd.String("hub-token"))
		if err != nil {
			return err
		}
		notifier = &notify.Notifier{Pub: &notify.HTTPPublisher{Hub: h, Client: hc}, Hub: h}
	}
	au, err := serverAuth(cmd, "sdshare")
	if err != nil {
		return err
	}
	pushURLs, pushClient, pushCreds, err := pushAuth(cmd)
	if err != nil {
		return err
	}
	openStore, err := sdshareServeStore(cmd)
	if err != nil {
		return err
	}
	start := time.Now()
	srv, err := server.Open(ctx, server.Config{Notifier: notifier, OpenStore: openStore,
		BaseURL: base, StateDir: cmd.String("state"), Collections: cols,
		PageSize: int(cmd.Int("page-size")), ChunkSize: int(cmd.Int("chunk-size")),
		Rescan: rescan, Debounce: cmd.Duration("debounce"), Push: pushURLs, PushClient: pushClient,
		Author: cmd.String("author"), ResourceSync: cmd.Bool("resourcesync"),
		CanonicalSteps: int64(cmd.Int("max-canonical-steps")),
		// The push failures quote the receivers' URLs: redacted (a token in
		// a --push URL's query).
		Log: commandLogger(cmd, redactWriter{pushCreds, cmd.Root().ErrWriter}, slog.LevelWarn),
	})
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	defer srv.Close()
	healthz := basePath(srv.BaseURL()) + "healthz"
	hs := httpserver.New(au.Handler(srv.Handler(), func(r *http.Request) bool { return r.URL.Path == healthz }), serverOptions(cmd, httpserver.Options{ReadTimeout: time.Minute}))
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	for _, c := range srv.Collections() {
		fmt.Fprintf(cmd.Root().Writer, "collection %s: %s\n", c.Name(), c.URL())
	}
	fmt.Fprintf(cmd.Root().Writer, "serving SDShare at %s (ready in %s)\n", srv.BaseURL(), time.Since(start).Round(time.Millisecond))
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	runDone := make(chan struct{})
	go func() { srv.Run(runCtx); close(runDone) }()
	var serveErr error
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			serveErr = cli.Exit(err.Error(), exitUsage)
		}
	}
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	hs.Shutdown(sctx)
	cancel()
	<-runDone
	return serveErr
}

// sdshareServeStore returns the Config.OpenStore of --store: nil for the
// embedded store (bolt:DIR sets --state), else each collection's set
// "sdshare.NAME" of the database, apart from the sets of a Source
// (serve --store) on the same database.
func sdshareServeStore(cmd *cli.Command) (func(context.Context, string) (store.Store, error), error) {
	u := cmd.String("store")
	if u == "" {
		return nil, nil
	}
	su, err := storeurl.Parse(u)
	switch {
	case errors.Is(err, storeurl.ErrNoPath):
		return nil, cli.Exit("--store bolt:DIR: no DIR", exitUsage)
	case err != nil:
		return nil, cli.Exit(fmt.Sprintf("--store %q: want bolt:DIR or postgres://...", redactURL(u)), exitUsage)
	case su.Embedded():
		if cmd.IsSet("state") && cmd.String("state") != su.Dir {
			return nil, cli.Exit("--store bolt:DIR and --state name two different directories", exitUsage)
		}
		cmd.Set("state", su.Dir)
		return nil, nil
	}
	return func(ctx context.Context, name string) (store.Store, error) { return su.Open(ctx, "sdshare."+name) }, nil
}

// envPushToken names the environment variable that holds the token sent
// to the --push receivers (--push-token-file wins over it).
const envPushToken = "RESOURCESYNC_PUSH_TOKEN"

// pushAuth returns the --push URLs without their userinfo and the client
// that sends the credentials (the token, a URL's userinfo) to the
// receivers' origins only.
func pushAuth(cmd *cli.Command) ([]string, *http.Client, *httpclient.Auth, error) {
	a, err := httpclient.New(httpclient.Options{BearerTokenFile: cmd.String("push-token-file"), BearerToken: os.Getenv(envPushToken)})
	if err != nil {
		return nil, nil, nil, cli.Exit("--push-token-file: "+err.Error(), exitUsage)
	}
	var urls []string
	for _, u := range cmd.StringSlice("push") {
		urls = append(urls, a.Source(u))
	}
	c, err := a.Client(&http.Client{Timeout: 30 * time.Second})
	if err != nil {
		return nil, nil, nil, cli.Exit(err.Error(), exitUsage)
	}
	return urls, c, a, nil
}
