package notify

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"github.com/resourcesync-go/resourcesync/internal/web"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/wspush"
)

// Paths of the live push below a Source's base URL.
const (
	PushSubscribePath = ".resourcesync/push"
	PushReceivePath   = ".resourcesync/push/receive"
	LivePath          = ".resourcesync/live"
)

// Push streams a served Source's changes over WebSocket (package wspush):
// each journal record becomes an Activity on the topics of its set's
// Capability List, the Source's base URL and the resource itself, at the
// moment the WebSub notifications are sent (Config.OnUpdate: the records
// are durable, the documents not rewritten yet). Each is retained by the
// broker until the documents that list it are published
// (Config.OnPublished), and replayed to a connection that opens
// meanwhile: a subscriber that connects, then catches up from the Change
// Lists, finds every change in one or the other.
type Push struct {
	b    *wspush.Broker
	base string

	mu     sync.Mutex
	src    *source.Source
	pushed map[string]uint64 // per set, the last journal record pushed
}

// SetupPush configures cfg (before source.Open) to advertise the
// subscription endpoint in every Capability List and to push every
// update. pc.ReceiveURL and pc.TopicAllowed are set here.
func SetupPush(cfg *source.Config, pc wspush.Config) (*Push, error) {
	p := &Push{base: cfg.BaseURL}
	if !strings.HasSuffix(p.base, "/") {
		p.base += "/"
	}
	pc.ReceiveURL = p.base + PushReceivePath
	pc.TopicAllowed = p.topicAllowed
	if pc.Logger == nil {
		pc.Logger = cfg.Logger
	}
	b, err := wspush.New(pc)
	if err != nil {
		return nil, err
	}
	p.b = b
	prevLinks := cfg.CapabilityLinks
	cfg.CapabilityLinks = func(set string) []rs.Link {
		var ls []rs.Link
		if prevLinks != nil {
			ls = prevLinks(set)
		}
		return append(ls, rs.Link{Rel: wspush.SubscriptionRel, Href: p.SubscribeURL(), Type: wspush.ContentType})
	}
	prevUpdate := cfg.OnUpdate
	cfg.OnUpdate = func(ctx context.Context, set string, st store.Store, from, to uint64) {
		// First: the push costs a few microseconds per record, a WebSub
		// publish a commit to the hub's store.
		p.push(ctx, set, st, to)
		if prevUpdate != nil {
			prevUpdate(ctx, set, st, from, to)
		}
	}
	prev := cfg.OnPublished
	cfg.OnPublished = func(ctx context.Context, set string, st store.Store, to uint64) {
		if prev != nil {
			prev(ctx, set, st, to)
		}
		p.push(ctx, set, st, to) // what OnUpdate did not see (ScanPaths before a restart)
		p.b.Settle(set, to)
	}
	return p, nil
}

// Bind gives Push the opened Source (its sets' URLs).
func (p *Push) Bind(src *source.Source) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.src = src
	p.pushed = map[string]uint64{}
	for _, set := range src.SetNames() {
		if st := src.Store(set); st != nil {
			if stt, err := st.Stats(context.Background()); err == nil {
				p.pushed[set] = stt.LastSeq // older records are in the Change Lists
			}
		}
	}
}

// Broker returns the broker (its connections, for the status).
func (p *Push) Broker() *wspush.Broker { return p.b }

// SubscribeURL is the subscription endpoint.
func (p *Push) SubscribeURL() string { return p.base + PushSubscribePath }

// LiveURL is the browser page that shows the changes as they happen.
func (p *Push) LiveURL() string { return p.base + LivePath }

// Close ends the connections.
func (p *Push) Close() { p.b.Close() }

// topicAllowed: the Source's base URL, a set's Capability List, or a URL
// below a set's resources.
func (p *Push) topicAllowed(t string) bool {
	if t == p.base {
		return true
	}
	p.mu.Lock()
	src := p.src
	p.mu.Unlock()
	if src == nil {
		return false
	}
	for _, set := range src.SetNames() {
		if t == src.CapabilityListURL(set) {
			return true
		}
		if rb := src.ResourceBase(set); rb != "" && strings.HasPrefix(t, rb) && len(t) > len(rb) {
			return true
		}
	}
	return false
}

// push sends the journal records of set after the last one pushed, up to
// to (published).
func (p *Push) push(ctx context.Context, set string, st store.Store, to uint64) {
	p.mu.Lock()
	src := p.src
	from, ok := p.pushed[set]
	if src == nil || !ok || to <= from {
		p.mu.Unlock()
		return
	}
	p.pushed[set] = to
	p.mu.Unlock()
	if p.b.SkipIfIdle(set, to) {
		// Nobody listens: the journal is not read for nothing, and a
		// connection is refused until these records are published.
		return
	}
	ps := &publish.Set{ResourceBase: src.ResourceBase(set)}
	cl := src.CapabilityListURL(set)
	for c, err := range st.Journal(ctx, from+1) {
		if err != nil {
			p.b.Missed(set, to)
			return
		}
		if c.Seq > to {
			return
		}
		e := publish.SetChangeEntry(ps, &c)
		p.b.PublishRetained(set, c.Seq, wspush.FromEntry(&e), cl, p.base, e.Loc)
	}
}

// Handlers returns the handlers to mount under the Source's base URL:
// the subscription endpoint, the WebSocket and the live page.
func (p *Push) Handlers() map[string]http.Handler {
	return map[string]http.Handler{
		PushSubscribePath: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/"+PushReceivePath) {
				p.b.ReceiveHandler().ServeHTTP(w, r)
				return
			}
			if !strings.HasSuffix(r.URL.Path, "/"+PushSubscribePath) {
				http.NotFound(w, r)
				return
			}
			p.b.SubscribeHandler().ServeHTTP(w, r)
		}),
		LivePath: web.LiveHandler(p.SubscribeURL(), p.base),
	}
}

// Link adds the Link header naming the subscription endpoint to the
// responses of h that are the Source's documents (the Source
// Description, the Capability Lists and the other documents below
// .resourcesync/).
func (p *Push) Link(mount string, h http.Handler) http.Handler {
	link := "<" + p.SubscribeURL() + `>; rel="` + wspush.SubscriptionRel + `"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rel, ok := strings.CutPrefix(r.URL.Path, mount); ok && (strings.HasPrefix(rel, ".well-known/") || strings.HasPrefix(rel, ".resourcesync/")) {
			w.Header().Add("Link", link)
		}
		h.ServeHTTP(w, r)
	})
}
