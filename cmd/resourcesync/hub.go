package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/websub/hub"
)

const hubHelp = `Runs a WebSub hub for ResourceSync Change Notification on its own.

ENDPOINTS (BASE is --url)
   BASE            the hub: POST subscription requests (hub.mode=subscribe or
                   unsubscribe), thin pings (hub.mode=publish with hub.url or
                   hub.topic) and ResourceSync publishes (the notification as
                   the body, Link rel="self" = topic and rel="hub" = BASE)
   /metrics        Prometheus metrics
   /healthz        200 while the hub runs
   /admin/         with --admin-token: GET /admin/dead-letters, POST
                   /admin/replay?id=N, GET /admin/stats

Notifications and each subscription's position are stored in --state before
a publish is acknowledged; a restarted hub resumes every delivery. Failed
deliveries are retried with backoff for about 48 hours, then kept as dead
letters. Callbacks on loopback, private or link-local addresses are refused
unless --allow-private-callbacks is given.`

func hubCommand() *cli.Command {
	return &cli.Command{
		Name:        "hub",
		Usage:       "run a WebSub hub (ResourceSync Change Notification)",
		UsageText:   "resourcesync hub [--addr HOST:PORT] [--state DIR] [--url URL] [--allow-private-callbacks] [--publish-token TOKEN]",
		Description: hubHelp,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Usage: "address to listen on", Value: "127.0.0.1:8090"},
			&cli.StringFlag{Name: "state", Usage: "state directory", Value: "hub-state"},
			&cli.StringFlag{Name: "url", Usage: "public URL of the hub (rel=\"hub\")", DefaultText: "http://ADDR/"},
			&cli.BoolFlag{Name: "allow-private-callbacks", Usage: "allow callbacks and topics on loopback, private and link-local addresses"},
			&cli.StringFlag{Name: "publish-token", Usage: "require \"Authorization: Bearer TOKEN\" on published notifications", Sources: cli.EnvVars("RESOURCESYNC_HUB_PUBLISH_TOKEN")},
			&cli.DurationFlag{Name: "lease-default", Usage: "lease granted when none is requested", Value: 10 * 24 * time.Hour},
			&cli.DurationFlag{Name: "lease-min", Usage: "shortest lease granted", Value: 5 * time.Minute},
			&cli.DurationFlag{Name: "lease-max", Usage: "longest lease granted", Value: 30 * 24 * time.Hour},
			&cli.Int64Flag{Name: "max-payload", Usage: "largest notification accepted, in bytes", Value: 8 << 20},
			&cli.IntFlag{Name: "max-subscriptions-per-topic", Value: 10000},
			&cli.StringFlag{Name: "signature-alg", Usage: "X-Hub-Signature algorithm: sha256, sha384, sha512 or sha1 (compatibility)", Value: "sha256"},
			&cli.FloatFlag{Name: "publish-rate", Usage: "publish requests accepted per second (then 429)", Value: 100},
			&cli.IntFlag{Name: "max-per-host", Usage: "concurrent deliveries per callback host", Value: 16},
			&cli.StringFlag{Name: "admin-token", Usage: "serve /admin/ (dead letters, replay, stats) to \"Authorization: Bearer TOKEN\"", Sources: cli.EnvVars("RESOURCESYNC_HUB_ADMIN_TOKEN")},
			&cli.BoolFlag{Name: "verbose", Usage: "log subscriptions and failures to stderr"},
		},
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
			level := slog.LevelWarn
			if cmd.Bool("verbose") {
				level = slog.LevelInfo
			}
			h, err := hub.Open(hub.Config{
				StateDir:                 cmd.String("state"),
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
				Logger:                   slog.New(slog.NewTextHandler(cmd.Root().ErrWriter, &slog.HandlerOptions{Level: level})),
			})
			if err != nil {
				return cli.Exit(err.Error(), exitUsage)
			}
			defer h.Close()
			return serveHub(ctx, cmd, ln, h, u)
		},
	}
}

// serveHub serves h on ln (hub at /, metrics at /metrics) and runs it
// until ctx is done, then shuts down gracefully.
func serveHub(ctx context.Context, cmd *cli.Command, ln net.Listener, h *hub.Hub, u string) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", h.Metrics())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	if tok := cmd.String("admin-token"); tok != "" {
		mux.Handle("/admin/", h.AdminHandler(tok))
	}
	mux.Handle("/", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	runDone := make(chan struct{})
	go func() { h.Run(rctx); close(runDone) }()
	fmt.Fprintf(cmd.Root().Writer, "hub at %s (metrics at %s, state in %s)\n", u, "http://"+ln.Addr().String()+"/metrics", cmd.String("state"))
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
