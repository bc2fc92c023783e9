package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/internal/authn"
	"github.com/resourcesync-go/resourcesync/internal/httpclient"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/notify"
	"github.com/resourcesync-go/resourcesync/websub/hub"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore/hubstoreurl"
	"github.com/resourcesync-go/resourcesync/wspush"
)

// notificationFlags configure a served Source's change notifications.
func notificationFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "hub", Usage: "send change notifications to the hub at `URL`"},
		&cli.BoolFlag{Name: "no-hub", Usage: "publish no change notifications"},
		&cli.StringFlag{Name: "hub-token", Usage: "`TOKEN` the hub takes publishes with"},
		&cli.BoolFlag{Name: "allow-private-callbacks", Usage: "let the embedded hub call private addresses"},
		&cli.StringFlag{Name: "hub-admin-token", Usage: "serve the embedded hub's admin pages to `TOKEN`", Sources: cli.EnvVars("RESOURCESYNC_HUB_ADMIN_TOKEN")},
		&cli.BoolFlag{Name: "no-push", Usage: "offer no live push of changes over WebSocket"},
		&cli.StringSliceFlag{Name: "push-origin", Usage: "pages of `HOST` may use the live push (repeatable)"},
	}
}

// setupPush configures cfg to push every change over WebSocket
// (source/notify.Push), unless --no-push.
func setupPush(cmd *cli.Command, cfg *source.Config) (*notify.Push, error) {
	if cmd.Bool("no-push") {
		return nil, nil
	}
	p, err := notify.SetupPush(cfg, wspush.Config{OriginPatterns: cmd.StringSlice("push-origin"), Logger: cfg.Logger})
	if err != nil {
		return nil, cli.Exit("push: "+err.Error(), exitUsage)
	}
	return p, nil
}

// pushOpen: the WebSocket of the live push is opened with the token its
// subscription (which needed the credentials) handed out; a browser
// cannot send an Authorization header on a WebSocket.
func pushOpen(base string) func(*http.Request) bool {
	mount := basePath(base)
	return func(r *http.Request) bool {
		return r.URL.Path == mount+notify.PushReceivePath
	}
}

func setupNotifications(cmd *cli.Command, cfg *source.Config, au *authn.Authenticator) (*notify.Service, error) {
	if cmd.Bool("no-hub") {
		return nil, nil
	}
	sc := notify.ServiceConfig{ExternalHub: cmd.String("hub"), Token: cmd.String("hub-token"),
		AllowPrivateCallbacks: cmd.Bool("allow-private-callbacks"), AdminToken: cmd.String("hub-admin-token")}
	if sc.ExternalHub != "" {
		var err error
		if sc.ExternalHub, sc.HubClient, err = hubPublisher(sc.ExternalHub, sc.Token); err != nil {
			return nil, err
		}
		sc.Token = "" // in the client
	}
	if au != nil {
		// A subscriber gets the URIs of the Source's changes: it needs the
		// credentials of the documents.
		sc.Hub = func(c *hub.Config) { c.SubscriberAuth = au.Check }
	}
	if u := cmd.String("store"); sc.ExternalHub == "" && isPostgresURL(u) {
		// The embedded hubs of the replicas share one state (resourcesync help state).
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		st, err := hubstoreurl.Open(ctx, u)
		cancel()
		if err != nil {
			return nil, cli.Exit(fmt.Sprintf("hub: --store %s: %v", redactURL(u), err), exitUsage)
		}
		sc.HubStore = st
	}
	s, err := notify.Setup(cfg, sc)
	if err != nil {
		return nil, cli.Exit("hub: "+err.Error(), exitUsage)
	}
	return s, nil
}

// hubPublisher returns an external --hub URL without its userinfo (the URL
// is advertised in the Capability Lists and in every notification) and
// the client that publishes to it: the userinfo as HTTP basic, the
// --hub-token as a bearer token, both to the hub's origin only (never to
// where a redirect leads).
func hubPublisher(hubURL, token string) (string, *http.Client, error) {
	a, err := httpclient.New(httpclient.Options{BearerToken: token})
	if err != nil {
		return "", nil, cli.Exit("--hub-token: want one line holding the token", exitUsage)
	}
	hubURL = a.Source(hubURL)
	c, err := a.Client(&http.Client{Timeout: 30 * time.Second})
	if err != nil {
		return "", nil, cli.Exit(err.Error(), exitUsage)
	}
	return hubURL, c, nil
}
