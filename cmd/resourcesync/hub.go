package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/internal/authn"
	"github.com/resourcesync-go/resourcesync/internal/httpserver"
	"github.com/resourcesync-go/resourcesync/websub/hub"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/boltstore"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/hubstoreurl"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/pgstore"
	"github.com/resourcesync-go/resourcesync/wspush"
)

// hubHelp is the help topic notifications.
const hubHelp = `Runs a WebSub hub for ResourceSync Change Notification on its own.

ENDPOINTS (BASE is --url)
   BASE            the hub: POST subscription requests (hub.mode=subscribe or
                   unsubscribe), thin pings (hub.mode=publish with hub.url or
                   hub.topic) and ResourceSync publishes (the notification as
                   the body, Link rel="self" = topic and rel="hub" = BASE)
   /push           the live push: POST a WebSocketChannel2023 subscription
                   naming a topic; its receiveFrom streams each change that
                   is published to it as an Activity Streams activity
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
   a reverse proxy) when the admin pages are reached over a network.`

// hubStoreHelp is hub's part of the help topic "state".
const hubStoreHelp = `STATE STORE OF THE HUB (hub --store URL)
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

// hubDescription is the description --help shows; the long text is in the
// help topics (topics.go).
const hubDescription = `Runs a WebSub hub for ResourceSync Change Notification: it stores each
subscription and publish, and delivers every notification, retrying for
--give-up-after; several hubs may share one PostgreSQL --store.

Examples:
  resourcesync hub --url https://hub.example.org/ --state /var/lib/rs-hub
  resourcesync hub --store postgres://rs@db/rs --url https://hub.example.org/

See also: resourcesync help notifications, state, authentication,
connections.`

func hubCommand() *cli.Command {
	return &cli.Command{
		Name:        "hub",
		Usage:       "run a WebSub hub (ResourceSync Change Notification)",
		UsageText:   "resourcesync hub [options]",
		Description: hubDescription,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "addr", Usage: "listen on `HOST:PORT`", Value: "127.0.0.1:8090"},
			&cli.StringFlag{Name: "state", Usage: "state `DIR`", Value: "hub-state"},
			&cli.StringFlag{Name: "store", Usage: "`URL` of the state store", DefaultText: "bolt:STATE", Sources: cli.EnvVars("RESOURCESYNC_HUB_STORE")},
			&cli.StringFlag{Name: "node", Usage: "this node's `NAME` among the hubs", DefaultText: "HOSTNAME-PID-RANDOM"},
			&cli.DurationFlag{Name: "claim-ttl", Usage: "a node's claim lasts `D` (takeover time)", Value: 6 * time.Second},
			&cli.StringFlag{Name: "import-state", Usage: "first copy the embedded state in `DIR` to PostgreSQL"},
			&cli.StringFlag{Name: "url", Usage: "public `URL` of the hub (rel=\"hub\")", DefaultText: "http://ADDR/"},
			&cli.BoolFlag{Name: "allow-private-callbacks", Usage: "allow callbacks and topics on private addresses"},
			&cli.StringFlag{Name: "publish-token", Usage: "require this bearer `TOKEN` on publishes", Sources: cli.EnvVars("RESOURCESYNC_HUB_PUBLISH_TOKEN")},
			&cli.DurationFlag{Name: "lease-default", Usage: "lease `D` granted when none is asked for", Value: 10 * 24 * time.Hour},
			&cli.DurationFlag{Name: "lease-min", Usage: "shortest lease `D` granted", Value: 5 * time.Minute},
			&cli.DurationFlag{Name: "lease-max", Usage: "longest lease `D` granted", Value: 30 * 24 * time.Hour},
			&SizeFlag{Name: "max-payload", Usage: "largest notification, `SIZE`", Value: 8 << 20},
			&cli.IntFlag{Name: "max-subscriptions-per-topic", Usage: "at most `N` subscriptions per topic", Value: 10000},
			&cli.StringFlag{Name: "signature-alg", Usage: "`ALG` of X-Hub-Signature: sha256, sha384, sha512, sha1", Value: "sha256"},
			&cli.FloatFlag{Name: "publish-rate", Usage: "`R` publishes a second, then 429", Value: 100},
			&cli.IntFlag{Name: "max-per-host", Usage: "`N` deliveries at once per callback host", Value: 16},
			maxConnsFlag(),
			&cli.StringFlag{Name: "admin-token", Usage: "serve the admin pages and API at /admin/ to `TOKEN`", Sources: cli.EnvVars("RESOURCESYNC_HUB_ADMIN_TOKEN")},
			&cli.DurationFlag{Name: "give-up-after", Usage: "retry a delivery for `D`, then dead-letter it", Value: 48 * time.Hour},
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
			push, err := hubPush(u, commandLogger(cmd, cmd.Root().ErrWriter, slog.LevelWarn))
			if err != nil {
				return cli.Exit(err.Error(), exitUsage)
			}
			defer push.Close()
			h, err := hub.Open(hub.Config{
				OnPublished:              hubPushPublished(push),
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
			return serveHub(ctx, cmd, ln, h, push, u, where, au)
		},
	}
}

// hubPush is the standalone hub's live push, at /push of its origin.
func hubPush(hubURL string, log *slog.Logger) (*wspush.Broker, error) {
	pu, err := url.Parse(hubURL)
	if err != nil {
		return nil, fmt.Errorf("--url: %w", err)
	}
	return wspush.New(wspush.Config{ReceiveURL: pu.Scheme + "://" + pu.Host + "/push/receive", Logger: log,
		TopicAllowed: func(t string) bool { return strings.HasPrefix(t, "http://") || strings.HasPrefix(t, "https://") }})
}

// hubPushPublished sends each notification published to the hub on to
// the push's subscribers of its topic, one activity per entry.
func hubPushPublished(push *wspush.Broker) func(topic, ct string, body []byte) {
	return func(topic, _ string, body []byte) {
		if push.Conns() == 0 {
			return
		}
		acts, _ := wspush.FromNotification(body) // what decoded; a fat ping of another kind has none
		for _, a := range acts {
			push.Publish(a, topic)
		}
	}
}

// serveHub serves h on ln (hub at /, metrics at /metrics) and runs it
// until ctx is done, then shuts down gracefully.
func serveHub(ctx context.Context, cmd *cli.Command, ln net.Listener, h *hub.Hub, push *wspush.Broker, u, where string, au *authn.Authenticator) error {
	mux := http.NewServeMux()
	// The subscription takes the subscribers' credentials; the WebSocket
	// its token.
	mux.Handle("/push", au.Handler(push.SubscribeHandler(), nil))
	mux.Handle("/push/receive", push.ReceiveHandler())
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
	case hu.Embedded():
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
