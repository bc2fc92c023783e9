package notify

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/websub/hub"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

// ServiceConfig says where a served Source's notifications go.
type ServiceConfig struct {
	// ExternalHub, if set, is the URL of the hub to publish to; otherwise
	// a hub is embedded, at BASE/.resourcesync/hub.
	ExternalHub string
	// Token: the embedded hub accepts publishes only with it; sent to an
	// external hub as a bearer token.
	Token string
	// HubClient sends the publishes to ExternalHub (default: a client
	// with a 30 s timeout). ExternalHub is advertised to subscribers: its
	// credentials, if any, belong in this client, not in the URL.
	HubClient *http.Client
	// AllowPrivateCallbacks lets the embedded hub deliver to loopback,
	// private and link-local addresses.
	AllowPrivateCallbacks bool
	// Hub, if set, adjusts the embedded hub's configuration.
	Hub func(*hub.Config)
	// HubStore, if set, is the embedded hub's state instead of a bbolt
	// file in the Source's state directory: a PostgreSQL store shared by
	// the replicas of a Source, so that a subscription made through any
	// replica receives what the scanner replica publishes. Setup takes it
	// over: Close (or a failing Setup) closes it.
	HubStore hubstore.Store
	// RetryInterval is how often held-back notifications are retried
	// (default 5s).
	RetryInterval time.Duration
	// AdminToken, if set, serves the embedded hub's admin pages and API
	// at BASE/.resourcesync/hub/admin/ (see hub.Hub.Admin).
	AdminToken string
}

// Service wires a Source to a hub: the Capability Lists advertise each
// set's channel, every update publishes the new journal records, and a
// ticker retries what a hub outage held back.
type Service struct {
	hub    *hub.Hub // embedded; nil with an external hub
	hubSt  hubstore.Store
	n      *Notifier
	hubURL string
	admin  string // AdminToken
	sets   []string
	log    *slog.Logger
	retry  time.Duration
}

type hubPublisher struct{ h *hub.Hub }

func (p hubPublisher) Publish(ctx context.Context, topic, ct string, body []byte, links []string) error {
	_, err := p.h.Publish(ctx, topic, ct, body, links)
	return err
}

// TopicURL is the channel (WebSub topic) of a set of a Source at base.
func TopicURL(base, set string) string { return base + ".resourcesync/" + set + "/notifications" }

// Setup configures cfg (before source.Open) to advertise and publish
// change notifications, and opens the embedded hub if there is one.
func Setup(cfg *source.Config, sc ServiceConfig) (*Service, error) {
	base := cfg.BaseURL
	s := &Service{log: cfg.Logger, retry: sc.RetryInterval, admin: sc.AdminToken}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.retry <= 0 {
		s.retry = 5 * time.Second
	}
	for _, set := range cfg.Sets {
		s.sets = append(s.sets, set.Name)
	}
	topic := func(set string) string { return TopicURL(base, set) }
	var pub Publisher
	if sc.ExternalHub != "" {
		s.hubURL = sc.ExternalHub
		c := sc.HubClient
		if c == nil {
			c = &http.Client{Timeout: 30 * time.Second}
		}
		pub = &HTTPPublisher{Hub: sc.ExternalHub, Client: c, Token: sc.Token}
	} else {
		s.hubURL = base + ".resourcesync/hub"
		hc := hub.Config{
			StateDir: filepath.Join(cfg.StateDir, "hub"), Store: sc.HubStore, URL: s.hubURL,
			AllowPrivateCallbacks: sc.AllowPrivateCallbacks, PublishToken: sc.Token,
			TopicAllowed: func(t string) bool { return strings.HasPrefix(t, base) },
			Logger:       cfg.Logger,
		}
		if sc.Hub != nil {
			sc.Hub(&hc)
		}
		h, err := hub.Open(hc)
		if err != nil {
			if sc.HubStore != nil {
				sc.HubStore.Close()
			}
			return nil, err
		}
		s.hub, s.hubSt = h, sc.HubStore
		pub = hubPublisher{h}
	}
	s.n = &Notifier{Pub: pub, Hub: s.hubURL, Topic: topic, Logger: cfg.Logger}
	cfg.Notification = func(set string) (string, string) { return topic(set), s.hubURL }
	prevLead := cfg.OnLead
	cfg.OnLead = func(ctx context.Context, set string, st store.Store) error {
		if prevLead != nil {
			if err := prevLead(ctx, set, st); err != nil {
				return err
			}
		}
		// A replica that takes the role starts the channel (once per
		// store) before it scans: Bind skipped the sets it did not lead.
		s.n.mu.Lock()
		defer s.n.mu.Unlock()
		return s.n.Init(ctx, set, st)
	}
	prev := cfg.OnUpdate
	cfg.OnUpdate = func(ctx context.Context, set string, st store.Store, from, to uint64) {
		if prev != nil {
			prev(ctx, set, st, from, to)
		}
		if err := s.n.Notify(ctx, set, st); err != nil {
			s.log.Warn("change notification not published yet; retrying", "set", set, "err", err)
		}
	}
	return s, nil
}

// HubURL returns the hub's URL.
func (s *Service) HubURL() string { return s.hubURL }

// Hub returns the embedded hub, or nil.
func (s *Service) Hub() *hub.Hub { return s.hub }

// Bind gives the Notifier what only the opened Source knows and starts
// each channel at the journal's end. Call it before the first update.
func (s *Service) Bind(ctx context.Context, src *source.Source) error {
	s.n.CapabilityList = src.CapabilityListURL
	s.n.ResourceBase = src.ResourceBase
	for _, set := range s.sets {
		if !src.Leads(set) {
			continue // a replica: the set's leader starts the channel
		}
		if err := s.n.Init(ctx, set, src.Store(set)); err != nil {
			return err
		}
	}
	return nil
}

// Handlers returns the handlers to mount under the Source's base URL
// (source.Source.Handler's extra): the topics, and the embedded hub with
// its metrics.
func (s *Service) Handlers() map[string]http.Handler {
	m := map[string]http.Handler{}
	for _, set := range s.sets {
		m[".resourcesync/"+set+"/notifications"] = s.n.TopicHandler(set)
	}
	if s.hub != nil {
		m[".resourcesync/hub"] = s.hub
		m[".resourcesync/metrics"] = s.hub.Metrics()
		if s.admin != "" {
			// BASE/.resourcesync/hub/admin/: the hub's admin, its links
			// relative (the metrics two levels up).
			admin := s.hub.Admin(hub.AdminOptions{Token: s.admin, MetricsURL: "../../metrics"})
			h := s.hub
			m[".resourcesync/hub"] = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				p := r.URL.Path
				switch {
				case strings.HasSuffix(p, "/.resourcesync/hub/admin"):
					http.Redirect(w, r, "admin/", http.StatusMovedPermanently)
				case strings.Contains(p, "/.resourcesync/hub/admin/"):
					admin.ServeHTTP(w, r)
				default:
					h.ServeHTTP(w, r)
				}
			})
		}
	}
	return m
}

// Run delivers (embedded hub) and retries held-back notifications until
// ctx ends.
func (s *Service) Run(ctx context.Context, src *source.Source) {
	if s.hub != nil {
		go s.hub.Run(ctx)
	}
	go func() {
		t := time.NewTicker(s.retry)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for _, set := range s.sets {
					if !src.Leads(set) {
						continue // only the leader notifies (replicas)
					}
					if err := s.n.Notify(ctx, set, src.Store(set)); err != nil && ctx.Err() == nil {
						s.log.Warn("change notification not published yet; retrying", "set", set, "err", err)
					}
				}
			}
		}
	}()
}

// Close closes the embedded hub and its HubStore.
func (s *Service) Close() error {
	if s == nil || s.hub == nil {
		return nil
	}
	err := s.hub.Close()
	if s.hubSt != nil {
		err = errors.Join(err, s.hubSt.Close())
	}
	return err
}
