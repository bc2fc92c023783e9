package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/internal/authn"
	"github.com/resourcesync-go/resourcesync/internal/httpserver"
	"github.com/resourcesync-go/resourcesync/websub/hub"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/boltstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/hubstoreurl"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/pgstore"
)

const hubHelp = `Runs a WebSub hub for ResourceSync Change Notification on its own.

ENDPOINTS (BASE is --url)
   BASE            the hub: POST subscription requests (hub.mode=subscribe or
                   unsubscribe), thin pings (hub.mode=publish with hub.url or
                   hub.topic) and ResourceSync publishes (the notification as
                   the body, Link rel="self" = topic and rel="hub" = BASE)
   /metrics        Prometheus metrics
   /healthz        200 while the hub runs
   /admin/         with --admin-token: the admin pages for a browser (log in
                   with the token; then overview, subscriptions with each
                   one's backlog, failures and last error, dead letters with
                   a Replay button), and for tools, with "Authorization:
                   Bearer TOKEN": GET /admin/dead-letters, POST
                   /admin/replay?id=N, GET /admin/stats, GET
                   /admin/subscriptions (JSON, ?page=N, ?topic=URL)

Notifications and each subscription's position are stored before a publish
is acknowledged; a restarted hub resumes every delivery. Failed deliveries are
retried with backoff for --give-up-after (48 hours), then kept as dead
letters. Callbacks on loopback, private or link-local addresses are refused
unless --allow-private-callbacks is given.

ADMIN PAGES (--admin-token, better given in $RESOURCESYNC_HUB_ADMIN_TOKEN)
   Open BASE/admin/ in a browser and type the token: the hub sets a session
   cookie (HttpOnly, SameSite=Strict, Secure over HTTPS, also behind a proxy
   sending X-Forwarded-Proto; a random session ID, not the token) for 12 hours or until "Log out". Failed logins, by
   the form or as a bearer token, are slowed down and limited per client
   address (10, then one a second, however many are sent at once; 100, then
   20 a second, for all addresses together), so a guesser does not lock out
   the admin at another address. The session serves the
   browser's navigations only: a script, even on a page of the same origin,
   cannot read the pages with it (nor, over HTTPS, through a window it
   opens: serve the admin over HTTPS when other pages share its origin, as
   serve --hub-admin-token's do with the Source's files). The pages have no script and load nothing from elsewhere;
   their forms (Replay, Log out) are refused unless they come from the same
   origin with the page's CSRF token. Serve the hub over HTTPS (e.g. behind
   a reverse proxy) when the admin pages are reached over a network.

STATE STORE (--store URL)
   bolt:DIR         the embedded store (the default): DIR/hub.db, one process
                    at a time. Without --store, DIR is --state.
   postgres://USER@HOST:PORT/DB?sslmode=...  (or postgresql://)
                    one PostgreSQL database shared by several hub processes
                    ("nodes") behind one URL (give them the same --url); the
                    schema is created or migrated on start. Any node accepts
                    subscriptions and publishes; each subscription is
                    delivered by one node at a time, which claims it for
                    --claim-ttl and renews the claim every third of it. When a
                    node dies (even kill -9), another takes its subscriptions
                    over within about --claim-ttl and resumes from the last
                    stored position: delivery stays at-least-once and in order.
                    --node names this process among the nodes (default: host
                    name, process ID and a random suffix); two processes
                    given the same name by mistake are still two nodes.
                    --import-state DIR copies a hub's embedded state (DIR/hub.db)
                    into an empty database first (moving a hub to PostgreSQL).
                    A password in the URL is visible to every local user
                    (ps): give the URL in $RESOURCESYNC_HUB_STORE, or the
                    password in $PGPASSWORD or ~/.pgpass.`

func hubCommand() *cli.Command {
	return &cli.Command{
		Name:        "hub",
		Usage:       "run a WebSub hub (ResourceSync Change Notification)",
		UsageText:   "resourcesync hub [--addr HOST:PORT] [--state DIR | --store bolt:DIR | --store postgres://...] [--node NAME] [--url URL] [--allow-private-callbacks] [--publish-token TOKEN]",
		Description: hubHelp + hubAuthHelp + connsHelp(bodyAtRate("--max-payload")) + hostGuardHelp("--url"),
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "addr", Usage: "address to listen on", Value: "127.0.0.1:8090"},
			&cli.StringFlag{Name: "state", Usage: "state directory (the embedded store)", Value: "hub-state"},
			&cli.StringFlag{Name: "store", Usage: "state store: bolt:DIR or postgres://... (see STATE STORE above)", DefaultText: "bolt:STATE", Sources: cli.EnvVars("RESOURCESYNC_HUB_STORE")},
			&cli.StringFlag{Name: "node", Usage: "this node's name among the hubs sharing a PostgreSQL store", DefaultText: "HOSTNAME-PID-RANDOM"},
			&cli.DurationFlag{Name: "claim-ttl", Usage: "how long a node's claim on a subscription lasts unless renewed (takeover time after a node dies)", Value: 6 * time.Second},
			&cli.StringFlag{Name: "import-state", Usage: "with a postgres:// store: first copy the embedded state in `DIR` (DIR/hub.db) into the empty database"},
			&cli.StringFlag{Name: "url", Usage: "public URL of the hub (rel=\"hub\")", DefaultText: "http://ADDR/"},
			&cli.BoolFlag{Name: "allow-private-callbacks", Usage: "allow callbacks and topics on loopback, private and link-local addresses"},
			&cli.StringFlag{Name: "publish-token", Usage: "require \"Authorization: Bearer TOKEN\" on published notifications", Sources: cli.EnvVars("RESOURCESYNC_HUB_PUBLISH_TOKEN")},
			&cli.DurationFlag{Name: "lease-default", Usage: "lease granted when none is requested", Value: 10 * 24 * time.Hour},
			&cli.DurationFlag{Name: "lease-min", Usage: "shortest lease granted", Value: 5 * time.Minute},
			&cli.DurationFlag{Name: "lease-max", Usage: "longest lease granted", Value: 30 * 24 * time.Hour},
			&SizeFlag{Name: "max-payload", Usage: "largest notification accepted, `SIZE` in bytes or KiB, MiB, GiB", Value: 8 << 20},
			&cli.IntFlag{Name: "max-subscriptions-per-topic", Value: 10000},
			&cli.StringFlag{Name: "signature-alg", Usage: "X-Hub-Signature algorithm: sha256, sha384, sha512 or sha1 (compatibility)", Value: "sha256"},
			&cli.FloatFlag{Name: "publish-rate", Usage: "publish requests accepted per second (then 429)", Value: 100},
			&cli.IntFlag{Name: "max-per-host", Usage: "concurrent deliveries per callback host", Value: 16},
			maxConnsFlag(),
			&cli.StringFlag{Name: "admin-token", Usage: "serve /admin/: admin pages for a browser after logging in with TOKEN, and the JSON API (dead letters, replay, stats, subscriptions) to \"Authorization: Bearer TOKEN\"", Sources: cli.EnvVars("RESOURCESYNC_HUB_ADMIN_TOKEN")},
			&cli.DurationFlag{Name: "give-up-after", Usage: "how long a failing delivery is retried before it becomes a dead letter", Value: 48 * time.Hour},
			&cli.BoolFlag{Name: "verbose", Usage: "log subscriptions and failures to stderr"},
		}, serverAuthFlags(true)...),
		Action: func(ctx context.Context, cmd *cli.Command) error {
			ln, err := net.Listen("tcp", cmd.String("addr"))
			if err != nil {
				return cli.Exit(err.Error(), exitUsage)
			}
			defer ln.Close()
			u := cmd.String("url")
			if u == "" {
				u = "http://" + ln.Addr().String() + "/"
			}
			st, where, err := openHubStore(ctx, cmd)
			if err != nil {
				return err
			}
			if st != nil {
				defer st.Close()
			}
			au, err := serverAuth(cmd, "hub")
			if err != nil {
				return err
			}
			var subAuth func(http.ResponseWriter, *http.Request) bool
			if au != nil {
				subAuth = au.Check
			}
			h, err := hub.Open(hub.Config{
				SubscriberAuth:           subAuth,
				StateDir:                 cmd.String("state"),
				Store:                    st,
				Node:                     cmd.String("node"),
				ClaimTTL:                 cmd.Duration("claim-ttl"),
				URL:                      u,
				LeaseDefault:             cmd.Duration("lease-default"),
				LeaseMin:                 cmd.Duration("lease-min"),
				LeaseMax:                 cmd.Duration("lease-max"),
				AllowPrivateCallbacks:    cmd.Bool("allow-private-callbacks"),
				PublishToken:             cmd.String("publish-token"),
				MaxPayloadBytes:          cmd.Int64("max-payload"),
				MaxSubscriptionsPerTopic: int(cmd.Int("max-subscriptions-per-topic")),
				MaxConcurrentPerHost:     int(cmd.Int("max-per-host")),
				PublishRate:              cmd.Float("publish-rate"),
				SignatureAlg:             cmd.String("signature-alg"),
				GiveUpAfter:              cmd.Duration("give-up-after"),
				Logger:                   commandLogger(cmd, cmd.Root().ErrWriter, slog.LevelWarn),
			})
			if err != nil {
				return cli.Exit(err.Error(), exitUsage)
			}
			defer h.Close()
			return serveHub(ctx, cmd, ln, h, u, where, au)
		},
	}
}

// serveHub serves h on ln (hub at /, metrics at /metrics) and runs it
// until ctx is done, then shuts down gracefully.
func serveHub(ctx context.Context, cmd *cli.Command, ln net.Listener, h *hub.Hub, u, where string, au *authn.Authenticator) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", au.Handler(h.Metrics(), nil))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	if tok := cmd.String("admin-token"); tok != "" {
		mux.Handle("/admin/", h.Admin(hub.AdminOptions{Token: tok, MetricsURL: "/metrics"}))
	}
	if cmd.String("publish-token") != "" {
		mux.Handle("/", h) // subscriptions: SubscriberAuth; publishes: the token
	} else {
		mux.Handle("/", au.Handler(h, nil))
	}
	srv := httpserver.New(mux, serverOptions(cmd, httpserver.Options{ReadTimeout: httpserver.ReadTimeoutFor(cmd.Int64("max-payload"))}))
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	runDone := make(chan struct{})
	go func() { h.Run(rctx); close(runDone) }()
	fmt.Fprintf(cmd.Root().Writer, "hub at %s (metrics at %s, state in %s)\n", u, "http://"+ln.Addr().String()+"/metrics", where)
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
	srv.Shutdown(sctx) // stop taking publishes first, then stop delivering
	stop()
	<-runDone
	return serveErr
}

// openHubStore opens the store --store names: nil for the embedded store
// (hub.Open opens DIR/hub.db itself), a pgstore for postgres://. where
// describes it for the start-up line (a password hidden).
func openHubStore(ctx context.Context, cmd *cli.Command) (st hubstore.Store, where string, err error) {
	u := cmd.String("store")
	if u == "" {
		if cmd.String("import-state") != "" {
			return nil, "", cli.Exit("--import-state needs a postgres:// --store", exitUsage)
		}
		return nil, cmd.String("state"), nil
	}
	hu, err := hubstoreurl.Parse(u)
	if cmd.String("import-state") != "" && (err != nil || !hu.Postgres()) {
		return nil, "", cli.Exit("--import-state needs a postgres:// --store", exitUsage)
	}
	switch {
	case errors.Is(err, hubstoreurl.ErrNoPath):
		return nil, "", cli.Exit("--store bolt:DIR: no DIR", exitUsage)
	case err != nil:
		return nil, "", cli.Exit(fmt.Sprintf("--store %q: want bolt:DIR or postgres://...", redactURL(u)), exitUsage)
	case !hu.Postgres():
		if cmd.IsSet("state") && cmd.String("state") != hu.Dir {
			return nil, "", cli.Exit("--store bolt:DIR and --state name two different directories", exitUsage)
		}
		cmd.Set("state", hu.Dir)
		return nil, hu.Dir, nil
	}
	where = hu.String()
	octx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err = hu.Open(octx)
	if err != nil {
		return nil, "", cli.Exit(fmt.Sprintf("--store %s: %v", where, err), exitUsage)
	}
	if dir := cmd.String("import-state"); dir != "" {
		if err := importHubState(ctx, cmd, st.(*pgstore.Store), dir); err != nil {
			st.Close()
			return nil, "", err
		}
	}
	return st, where, nil
}

// importHubState copies DIR/hub.db into the empty PostgreSQL store.
func importHubState(ctx context.Context, cmd *cli.Command, ps *pgstore.Store, dir string) error {
	src, err := boltstore.Open(filepath.Join(dir, hubstoreurl.FileName), nil)
	if err != nil {
		return cli.Exit(fmt.Sprintf("--import-state %s: %v", dir, err), exitUsage)
	}
	defer src.Close()
	n, err := ps.Import(ctx, src)
	if err != nil {
		return cli.Exit(fmt.Sprintf("--import-state %s: %v", dir, err), exitUsage)
	}
	fmt.Fprintf(cmd.Root().Writer, "imported %s: %d topics, %d log entries, %d subscriptions, %d pending verifications, %d dead letters\n",
		dir, n.Topics, n.Entries, n.Subscriptions, n.Jobs, n.DeadLetters)
	if n.TooLong > 0 {
		fmt.Fprintf(cmd.Root().ErrWriter, "warning: --import-state %s: %d topics, subscriptions or pending verifications left out: their URLs are too long for PostgreSQL's indexes\n", dir, n.TooLong)
	}
	return nil
}
