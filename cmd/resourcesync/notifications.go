package main

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/internal/store"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/notify"
	"github.com/resourcesync-go/resourcesync/websub/hub"
)

// notificationFlags configure a served Source's change notifications.
func notificationFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "hub", Usage: "publish change notifications to the external WebSub hub at `URL` (default: an embedded hub at BASE/.resourcesync/hub)"},
		&cli.BoolFlag{Name: "no-hub", Usage: "publish no change notifications"},
		&cli.StringFlag{Name: "hub-token", Usage: "publish token: the embedded hub accepts publishes only with it; sent to an external hub as a bearer token"},
		&cli.BoolFlag{Name: "allow-private-callbacks", Usage: "let the embedded hub deliver to loopback, private and link-local callback addresses"},
	}
}

// notifications wires a Source to a hub: the Capability Lists advertise
// each set's channel, every update publishes the new journal records, and
// a ticker retries what a hub outage held back.
type notifications struct {
	hub    *hub.Hub // embedded; nil with --hub
	n      *notify.Notifier
	hubURL string
	sets   []string
	log    *slog.Logger
}

type hubPublisher struct{ h *hub.Hub }

func (p hubPublisher) Publish(ctx context.Context, topic, ct string, body []byte, links []string) error {
	_, err := p.h.Publish(ctx, topic, ct, body, links)
	return err
}

func setupNotifications(cmd *cli.Command, cfg *source.Config) (*notifications, error) {
	if cmd.Bool("no-hub") {
		return nil, nil
	}
	base := cfg.BaseURL
	nt := &notifications{log: cfg.Logger}
	for _, s := range cfg.Sets {
		nt.sets = append(nt.sets, s.Name)
	}
	topic := func(set string) string { return base + ".resourcesync/" + set + "/notifications" }
	var pub notify.Publisher
	if u := cmd.String("hub"); u != "" {
		nt.hubURL = u
		pub = &notify.HTTPPublisher{Hub: u, Client: &http.Client{Timeout: 30 * time.Second}, Token: cmd.String("hub-token")}
	} else {
		nt.hubURL = base + ".resourcesync/hub"
		h, err := hub.Open(hub.Config{
			StateDir: filepath.Join(cfg.StateDir, "hub"), URL: nt.hubURL,
			AllowPrivateCallbacks: cmd.Bool("allow-private-callbacks"), PublishToken: cmd.String("hub-token"),
			TopicAllowed: func(t string) bool { return strings.HasPrefix(t, base) },
			Logger:       cfg.Logger,
		})
		if err != nil {
			return nil, cli.Exit("hub: "+err.Error(), exitUsage)
		}
		nt.hub = h
		pub = hubPublisher{h}
	}
	nt.n = &notify.Notifier{Pub: pub, Hub: nt.hubURL, Topic: topic, Logger: cfg.Logger}
	cfg.Notification = func(set string) (string, string) { return topic(set), nt.hubURL }
	cfg.OnUpdate = func(ctx context.Context, set string, st store.Store, _, _ uint64) {
		if err := nt.n.Notify(ctx, set, st); err != nil {
			nt.log.Warn("change notification not published yet; retrying", "set", set, "err", err)
		}
	}
	return nt, nil
}

// bind gives the Notifier what only the opened Source knows, and starts
// each channel at the journal's end. It runs before the first update.
func (nt *notifications) bind(ctx context.Context, src *source.Source) error {
	nt.n.CapabilityList = src.CapabilityListURL
	nt.n.ResourceBase = src.ResourceBase
	for _, s := range nt.sets {
		if err := nt.n.Init(ctx, s, src.Store(s)); err != nil {
			return err
		}
	}
	return nil
}

// extra returns the handlers to mount under the Source's base URL.
func (nt *notifications) extra() map[string]http.Handler {
	m := map[string]http.Handler{}
	for _, s := range nt.sets {
		m[".resourcesync/"+s+"/notifications"] = nt.n.TopicHandler(s)
	}
	if nt.hub != nil {
		m[".resourcesync/hub"] = nt.hub
		m[".resourcesync/metrics"] = nt.hub.Metrics()
	}
	return m
}

// run delivers (embedded hub) and retries held-back notifications until
// ctx ends.
func (nt *notifications) run(ctx context.Context, src *source.Source) {
	if nt.hub != nil {
		go nt.hub.Run(ctx)
	}
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for _, s := range nt.sets {
					if err := nt.n.Notify(ctx, s, src.Store(s)); err != nil && ctx.Err() == nil {
						nt.log.Warn("change notification not published yet; retrying", "set", s, "err", err)
					}
				}
			}
		}
	}()
}

func (nt *notifications) close() {
	if nt != nil && nt.hub != nil {
		nt.hub.Close()
	}
}
