package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/resourcesync-go/resourcesync/feed"
	"net"
	"net/http"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/internal/httpserver"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/publish"
)

// serveHelp is the start of the help topic layout: what serve does.
const serveHelp = `Publishes DIR (or several named sets) as a ResourceSync Source over HTTP and
keeps it up to date: every change found by a rescan (--rescan-interval) or a
filesystem event (--watch) is recorded in a durable change journal, and the
documents are published again.
DIR may be a bucket, s3://BUCKET/PREFIX, rescanned by listing; its state is then
kept under the user's state directory (~/.local/state/resourcesync/sources/)
unless --state says where.`

// serveLayoutHelp is the help topic "layout": the URLs of a Source and
// what a browser sees.
const serveLayoutHelp = `LAYOUT (BASE is --base-url)
   BASE/<path>                               the resources: DIR's files, by their path
                                             (BASE/NAME/<path> with several --set)
   BASE/.well-known/resourcesync             Source Description
   BASE/.resourcesync/SET/capabilitylist.xml Capability List of a set; beside it
                                             resourcelist.xml, changelist.xml (the
                                             Change List Index), resourcedump.xml,
                                             changedump.xml, archives, and their parts;
                                             the Change Lists in changelists/ (with
                                             --changelist-index=false the Capability List
                                             names the open one instead of the index,
                                             and the new one after each rotation: for
                                             py-resync --incremental --changelist-uri)
   BASE/robots.txt                           Sitemap: lines naming each Resource List
   BASE/.resourcesync/                       status page (HTML, public like the documents):
                                             per set the resources and their total size,
                                             the newest journal records, changes per hour
                                             and per day, the Change Lists and dumps, the
                                             embedded hub's subscribers (callback hosts
                                             only), backlog and dead letters, a link to
                                             BASE/.resourcesync/metrics

IN A BROWSER
   A browser's navigation (Sec-Fetch-Mode: navigate, or over plain http
   Upgrade-Insecure-Requests: 1, with an Accept naming text/html) or ?format=html
   gets every document above as a readable HTML page from the same URL:
   entries as links, sizes, hashes, change types, 1,000 entries a page
   (?page=N), breadcrumbs up to the Source Description. Every other client
   (Java's default Accept "text/html, ..., */*; q=.2" included, and sync,
   validate, curl, wget, py-resync) gets the XML byte for byte; both carry
   Vary: Accept, Sec-Fetch-Dest, Sec-Fetch-Mode, Upgrade-Insecure-Requests.
   The pages have no script and load nothing from elsewhere. The URLs of
   publish's companions (NAME.html, .well-known/resourcesync.html) show them too.
   BASE/ is DIR's index.html when there is one; otherwise a browser is sent
   to the status page and other clients get 404 naming the Source Description.
   --hub-admin-token TOKEN serves the embedded hub's admin pages at
   BASE/.resourcesync/hub/admin/ (log in with the token); the resources are
   then served with "Content-Security-Policy: sandbox", so that an HTML file
   of the collection cannot script the admin pages of its origin.

Hidden files and directories (names starting with '.') are not published, so
the reserved prefix cannot collide with a resource. State lives in --state
(default DIR/.resourcesync); restarting resumes from it.`

// serveDumpsHelp is serve's part of the help topic "dumps".
const serveDumpsHelp = `DUMPS ON DEMAND
   By default serve writes no dump package: resourcedump.xml and changedump.xml
   list packages (length exact, no package digest) that are produced when a
   client requests them, streamed as ZIP (stored, manifest.xml first) from DIR's
   files and byte for byte the same for the same inventory, so Range requests
   resume a download. --state then holds only the state and documents (a few
   hundred bytes per resource), not a copy of DIR. A package is planned again
   (no file is read) when the collection changed, at most once a minute; a
   package whose resources changed since it was listed answers 404 (a
   Destination then fetches them from the Resource List), and a file that
   changes while its package streams aborts the download. A Change Dump package
   holds the bytes of a change only while the resource still has them: once a
   resource of its Change List changes again, the next publish drops the
   package from changedump.xml (the Change List stays).
   --dump-files writes the packages instead (the DOCUMENTS AND DISK costs
   below); --no-dumps offers no dumps at all.`

// serveEmptyHelp is serve's part of the help topic "safety".
const serveEmptyHelp = `AN UNMOUNTED OR EMPTIED DIR
   DIR must exist at start (exit 2 otherwise). A scan that finds DIR (or a
   --set's directory: each set on its own) missing, or holding no file while
   the state holds resources, records nothing: every mirror would otherwise
   delete everything. That set keeps serving its last state and an error is
   logged on each refused scan; --allow-empty lets a real emptying through
   (a missing DIR is refused even then).
   On mounted storage keep --state outside DIR: a state inside DIR vanishes
   with the mount, and a Source started on the empty mount point is a new,
   empty collection that nothing can tell from a real one (mirrors are then
   protected only by sync --max-delete).`

// serveDescription is the description --help shows; the long text is in the
// help topics (topics.go).
const serveDescription = `Serves DIR (or --set, s3://BUCKET/PREFIX) as a ResourceSync Source and feeds.

Examples:
  resourcesync serve --watch ./collection
  resourcesync serve --addr :8080 --base-url https://data.example.org/ /srv/data
  resourcesync serve --oai-pmh https://repo.example.org/oai --state st ./records

See also: resourcesync help layout, dumps, safety, state, oai-pmh,
authentication, connections.`

func serveCommand() *cli.Command {
	return &cli.Command{
		Name:        "serve",
		Usage:       "publish a directory as a ResourceSync Source over HTTP",
		UsageText:   "resourcesync serve [options] [DIR]",
		Description: serveDescription,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "addr", Usage: "listen on `HOST:PORT`", Value: "127.0.0.1:8080"},
			&cli.StringFlag{Name: "base-url", Usage: "public `URL` of the Source", DefaultText: "http://ADDR/"},
			&cli.BoolFlag{Name: "watch", Value: true, Usage: "watch DIR for changes"},
			&cli.BoolFlag{Name: "no-watch", Usage: "only --rescan-interval sees changes"},
			&cli.DurationFlag{Name: "debounce", Usage: "with --watch: wait `D` of quiet", Value: 20 * time.Millisecond},
			&cli.DurationFlag{Name: "rescan-interval", Usage: "rescan every `D` (0: never)", Value: time.Minute},
			maxConnsFlag(),
			&cli.BoolFlag{Name: "dump-files", Usage: "write the dump packages as ZIP files"},
		}, append(append(append(sourceFlags(), oaiFlags(true)...), notificationFlags()...), serverAuthFlags(true)...)...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			if err := checkOAIArgs(cmd); err != nil {
				return err
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
			cfg, err := sourceConfig(ctx, cmd, base, cmd.Root().ErrWriter)
			if err != nil {
				return err
			}
			defer closeContents(cfg)
			cfg.DumpsOnDemand = !cmd.Bool("dump-files")
			if cfg.OpenStore != nil && isPostgresURL(cmd.String("store")) && !cmd.IsSet("state") {
				// The default, DIR/.resourcesync, would be one directory for
				// every replica of DIR on shared storage.
				return cli.Exit("--store postgres://...: give --state, a directory of this replica's own (its documents)", exitUsage)
			}
			oai, err := newOAISource(cmd, &cfg, true)
			if err != nil {
				return err
			}
			if oai != nil {
				defer oai.Close()
				// The harvester names the files it writes: rescans (if
				// asked for) run between its harvests, never during one.
				rescan := time.Duration(0)
				if cmd.IsSet("rescan-interval") {
					rescan = cmd.Duration("rescan-interval")
				}
				if oai.Empty() {
					// The first harvest becomes the Source's baseline.
					fmt.Fprintf(cmd.Root().Writer, "first harvest of %s into %s (then serving)\n", oai.Endpoint(), oai.Dir())
					stop := oai.Unavailable(ln)
					_, err := oai.Harvest(ctx, nil)
					stop()
					if ctx.Err() != nil {
						return nil
					} else if err != nil {
						cfg.Logger.Error("first harvest failed; serving what it harvested, the next harvest resumes", "err", oai.Clean(err.Error()))
					}
				}
				fmt.Fprintf(cmd.Root().Writer, "harvesting %s into %s every %s\n", oai.Endpoint(), oai.Dir(), cmd.Duration("oai-interval"))
				return serveSource(ctx, cmd, ln, cfg, source.RunOptions{}, func(ctx context.Context, src *source.Source) func() {
					done := make(chan struct{})
					go func() {
						defer close(done)
						oai.Run(ctx, src, cmd.Duration("oai-interval"), rescan)
					}()
					return func() { <-done }
				})
			}
			return serveSource(ctx, cmd, ln, cfg, source.RunOptions{
				RescanInterval: cmd.Duration("rescan-interval"), Watch: cmd.Bool("watch") && !cmd.Bool("no-watch"), Debounce: cmd.Duration("debounce"),
			}, nil)
		},
	}
}

// watchBlind is Source.WatchBlind; a test makes a directory read as on
// a network file system.
var watchBlind = (*source.Source).WatchBlind

// serveSource opens the Source, brings it up to date, serves it on ln and
// keeps it updated until ctx is done. before, if set, runs after the first
// update (simulate starts its changes there, serve --oai-pmh its
// harvests); the function it returns, if not nil, is waited for once ctx
// is done, before the Source closes.
func serveSource(ctx context.Context, cmd *cli.Command, ln net.Listener, cfg source.Config, ro source.RunOptions, before func(context.Context, *source.Source) func()) error {
	au, err := serverAuth(cmd, "resourcesync")
	if err != nil {
		return err
	}
	nt, err := setupNotifications(cmd, &cfg, au)
	if err != nil {
		return err
	}
	defer nt.Close()
	push, err := setupPush(cmd, &cfg)
	if err != nil {
		return err
	}
	if push != nil {
		defer push.Close()
	}
	if nt != nil && nt.Hub() != nil {
		cfg.StatusHub = nt.Hub() // the status page shows its subscribers
	}
	// The admin pages share the Source's origin with its files, HTML ones
	// included: sandboxed, those cannot script the admin (over plain HTTP a
	// window they open would otherwise reach it).
	cfg.SandboxResources = cmd.String("hub-admin-token") != ""
	src, err := source.Open(cfg)
	if err != nil {
		return cli.Exit(err.Error()+lockedHint(err), exitUsage)
	}
	defer src.Close()
	var extra map[string]http.Handler
	if nt != nil {
		if err := nt.Bind(ctx, src); err != nil {
			return cli.Exit("notifications: "+err.Error(), exitUsage)
		}
		extra = nt.Handlers()
	}
	if push != nil {
		push.Bind(src)
		if extra == nil {
			extra = map[string]http.Handler{}
		}
		for k, h := range push.Handlers() {
			extra[k] = h
		}
	}
	if extra, err = mountOAI(cmd, src, extra); err != nil {
		return err
	}
	start := time.Now()
	if ro.Watch && ro.Watcher == nil {
		// Watch before the first scan, so that a change made while it
		// runs (or before Run starts) is not missed. By default only
		// where a watch sees the changes; an explicit --watch watches
		// anyway.
		asked := cmd.IsSet("watch")
		fallBack := func(why string) {
			then := "rescanning every " + ro.RescanInterval.String()
			if ro.RescanInterval <= 0 {
				then = "and --rescan-interval 0: changes are published only on restart"
			}
			cfg.Logger.Warn("not watching: " + why + "; " + then + " (--watch to watch anyway, --no-watch to silence this)")
			ro.Watch = false
		}
		if why := watchBlind(src); why != "" && !asked {
			fallBack(why)
		} else if w, err := src.Watch(); err != nil {
			if asked {
				return cli.Exit(err.Error(), exitUsage)
			}
			fallBack(err.Error()) // e.g. the inotify instances spent
		} else {
			defer w.Close()
			ro.Watcher = w
		}
	}
	rep, err := src.Update(ctx)
	if source.Refused(err) {
		// An unmounted or emptied set: its last state is served, and
		// each rescan tries again (and logs the refusal again).
		cfg.Logger.Error("scan refused: nothing recorded as deleted, the last good state is served", "err", err)
		err = nil
	}
	if err != nil && src.Shared() && errors.Is(err, publish.ErrConfig) {
		// A replica that does not lead yet cannot render documents made
		// with other settings (e.g. a --base-url changed on restart). Not
		// fatal: once it takes the scanner role it publishes with its own
		// settings; until then the render error is logged.
		cfg.Logger.Error("documents not rendered yet", "err", err)
		err = nil
	}
	if err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	n := int64(0)
	for _, s := range rep.Publish.Sets {
		n += s.Resources
	}
	var open func(*http.Request) bool
	if nt != nil && nt.Hub() != nil {
		open = embeddedHubOpen(src.BaseURL(), cmd.String("hub-token") != "", cmd.String("hub-admin-token") != "")
	}
	var h http.Handler = src.Handler(extra)
	if push != nil {
		h = push.Link(basePath(src.BaseURL()), h)
		hubOpen, pOpen := open, pushOpen(src.BaseURL())
		open = func(r *http.Request) bool { return pOpen(r) || (hubOpen != nil && hubOpen(r)) }
	}
	srv := httpserver.New(au.Handler(h, open), serverOptions(cmd, httpserver.Options{ReadTimeout: time.Minute}))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintf(cmd.Root().Writer, "serving %d resources at %s (Source Description: %s.well-known/resourcesync; ready in %s)\n",
		n, src.BaseURL(), src.BaseURL(), time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(cmd.Root().Writer, "status page: %s.resourcesync/\n", src.BaseURL())
	if cmd.Bool("feeds") {
		fmt.Fprintf(cmd.Root().Writer, "change feeds: IIIF Change Discovery %s.resourcesync/SET/feed/%s, LDES %s.resourcesync/SET/feed/%s\n",
			src.BaseURL(), feed.CollectionFile, src.BaseURL(), feed.StreamFile)
	}
	if nt != nil {
		nt.Run(ctx, src)
		where := "embedded hub " + nt.HubURL()
		if nt.Hub() == nil {
			where = "hub " + nt.HubURL()
		}
		fmt.Fprintf(cmd.Root().Writer, "change notifications: %s, topics %s.resourcesync/SET/notifications\n", where, src.BaseURL())
	}
	if push != nil {
		fmt.Fprintf(cmd.Root().Writer, "live push over WebSocket: subscribe at %s (WebSocketChannel2023), browser view %s\n", push.SubscribeURL(), push.LiveURL())
	}
	var wait func()
	if before != nil {
		wait = before(ctx, src)
	}
	runErr := make(chan error, 1)
	go func() { runErr <- src.Run(ctx, ro) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return cli.Exit(err.Error(), exitUsage)
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	<-runErr
	if wait != nil {
		wait()
	}
	return nil
}
