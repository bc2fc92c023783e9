package status

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/websub/hub"
)

// Set is one set of resources of the Source.
type Set struct {
	Name  string
	Store store.Store
	// ResourceBase is the URL prefix of the set's resources (a resource's
	// URL is ResourceBase followed by its escaped path).
	ResourceBase string
	// CapabilityList is the URL of the set's Capability List.
	CapabilityList string
	// Topic is the URL of the set's change-notification channel, "" when
	// there is none.
	Topic string
	// Feeds is the URL of the directory of the set's change feeds
	// (publish.FeedDir), "" when there are none: the page links the IIIF
	// Change Discovery collection and the LDES in it.
	Feeds string
	// Problem, if set, says what is wrong with the set now ("" nothing),
	// such as a refused scan of an emptied directory; the page shows it
	// at the top of the set's section. It is public: no file path.
	Problem func() string
}

// Hub is what the page reads of an embedded WebSub hub (read-only);
// *hub.Hub implements it.
type Hub interface {
	Stats() hub.Stats
	CountSubscriptions(ctx context.Context, topic string) (int, error)
	SubscriptionStates(ctx context.Context, topic string, offset, limit int) ([]hub.SubscriptionState, bool, error)
	DeadLetterPage(ctx context.Context, offset, limit int) ([]hub.DeadLetter, bool, error)
}

// Config configures a Handler.
type Config struct {
	// BaseURL is the Source's base URL (ending with "/").
	BaseURL string
	Sets    []Set
	// Docs is the published document tree (publish's OUT).
	Docs string
	// HubURL is the hub the Capability Lists name, "" without change
	// notifications.
	HubURL string
	// Hub is the embedded hub, nil with an external one or none.
	Hub Hub
	// Metrics is the URL of the metrics, "" when none are served.
	Metrics string
	// Refresh is the page's meta refresh; default 30s, negative for none.
	Refresh time.Duration
	// MaxAge is how long computed figures are reused; default 5s.
	MaxAge time.Duration
	// Wait is how long a request waits for figures being computed before
	// it shows the previous ones; default 300ms.
	Wait time.Duration
	// BytesInterval is the shortest time between two passes over a set's
	// inventory to sum its sizes (the pause is also at least 50 times the
	// last pass's duration); default 5s. Negative: no pause (tests).
	BytesInterval time.Duration
	// SubscriptionLimit is how many subscriptions of each set's channel
	// are read (grouped by callback host); beyond, the page says the
	// figures are of the first ones. Default 1000.
	SubscriptionLimit int
	// DeadLetterLimit: the newest dead letters are listed while the hub
	// holds at most this many (the hub reads them in ID order, so listing
	// the newest passes over the others); beyond, only their count.
	// Default 10000.
	DeadLetterLimit int
	// Sections, if set, returns more sections, shown after the sets as
	// they are at each request (not cached with the figures).
	Sections func() []Section
	Now      func() time.Time
	Logger   *slog.Logger
}

// Section is a part of the page beside the sets: what feeds the Source,
// such as the OAI-PMH repository it harvests. It is public like the page.
type Section struct {
	ID    string // the HTML id, letters, digits and '-'
	Title string
	Facts []Fact
	// Problem, if set, is shown at the top of the section.
	Problem string
}

// Fact is one line of a Section. Figure, if set, names it for scripts
// (data-figure).
type Fact struct {
	Name, Value, Figure string
}

// Handler serves the status page. It is safe for concurrent use.
type Handler struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	snap    *snapshot     // the figures last computed; nil before the first refresh
	snapAt  time.Time     // when (wall clock) they were
	running chan struct{} // closed when the refresh in progress ends; nil when none
	bytes   map[string]*bytesState
	seqs    map[string]*seqCache // by set; used by the refresh goroutine only
}

// New returns a Handler; Close stops its background work.
func New(cfg Config) *Handler {
	if cfg.Refresh == 0 {
		cfg.Refresh = 30 * time.Second
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = 5 * time.Second
	}
	if cfg.Wait == 0 {
		cfg.Wait = 300 * time.Millisecond
	}
	if cfg.BytesInterval == 0 {
		cfg.BytesInterval = 5 * time.Second
	}
	if cfg.SubscriptionLimit == 0 {
		cfg.SubscriptionLimit = 1000
	}
	if cfg.DeadLetterLimit == 0 {
		cfg.DeadLetterLimit = 10000
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Handler{cfg: cfg, ctx: ctx, cancel: cancel, bytes: map[string]*bytesState{}, seqs: map[string]*seqCache{}}
	for _, s := range cfg.Sets {
		h.bytes[s.Name] = &bytesState{}
		h.seqs[s.Name] = &seqCache{}
	}
	return h
}

// Close stops the background passes and waits for them.
func (h *Handler) Close() error {
	h.cancel()
	h.wg.Wait()
	return nil
}

// ServeHTTP answers GET and HEAD with the page.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	snap := h.figures(r.Context())
	if snap == nil {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "status not available yet; retry", http.StatusServiceUnavailable)
		return
	}
	h.render(w, r, snap)
}

// figures returns the current figures, refreshing them when older than
// MaxAge (waiting at most Wait for that).
func (h *Handler) figures(ctx context.Context) *snapshot {
	done := h.refresh()
	// One deadline for both waits (a timer's channel fires once: a
	// refresh slower than Wait must not leave the second wait unbounded).
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Wait)
	defer cancel()
	select {
	case <-done:
	case <-ctx.Done():
	}
	// Wait (within the same deadline) for the inventory passes the
	// refresh started, so that a quiet set's size is exact.
	h.mu.Lock()
	var passes []chan struct{}
	for _, b := range h.bytes {
		if b.running != nil {
			passes = append(passes, b.running)
		}
	}
	h.mu.Unlock()
	for _, p := range passes {
		select {
		case <-p:
		case <-ctx.Done():
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.snap
}

// refresh starts a refresh unless the figures are fresh or one runs; it
// returns a channel closed when the figures are current.
func (h *Handler) refresh() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.running != nil {
		return h.running
	}
	if h.snap != nil && time.Since(h.snapAt) < h.cfg.MaxAge {
		c := make(chan struct{})
		close(c)
		return c
	}
	done := make(chan struct{})
	h.running = done
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		snap := h.compute(h.ctx)
		h.mu.Lock()
		h.snap, h.snapAt, h.running = snap, time.Now(), nil
		h.mu.Unlock()
		close(done)
	}()
	return done
}
