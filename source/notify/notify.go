package notify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/httperr"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/publish"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// ContentType of change notification payloads.
const ContentType = "application/xml"

// Publisher hands a payload to a hub. It returns only once the hub has
// accepted (stored) it.
type Publisher interface {
	Publish(ctx context.Context, topic, contentType string, body []byte, links []string) error
}

// HTTPPublisher publishes to a hub over HTTP the ResourceSync way: POST the
// payload with Link rel="self" (topic) and rel="hub" (RS-WS-2).
type HTTPPublisher struct {
	Hub    string
	Client *http.Client
	// Token, if set, is sent as a bearer token (hubs that only accept
	// publishes from their Source).
	Token string
}

// Publish POSTs the payload; any status other than 2xx is an error.
func (p *HTTPPublisher) Publish(ctx context.Context, topic, contentType string, body []byte, links []string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Hub, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	for _, l := range links {
		req.Header.Add("Link", l)
	}
	if p.Token != "" {
		req.Header.Set("Authorization", "Bearer "+p.Token)
	}
	c := p.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("publish to %s: %w", p.Hub, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("publish: %w", &httperr.StatusError{Method: http.MethodPost, URL: p.Hub, Code: resp.StatusCode, Body: string(bytes.TrimSpace(msg))})
	}
	return nil
}

// Notifier turns journal records into change notifications.
type Notifier struct {
	Pub Publisher
	// Hub is the hub's URL, sent as rel="hub".
	Hub string
	// Topic, CapabilityList and ResourceBase give each set's channel, its
	// Capability List (rel="up" and rel="resourcesync") and the URL prefix
	// of its resources.
	Topic          func(set string) string
	CapabilityList func(set string) string
	ResourceBase   func(set string) string
	// ResourceLoc, if set, gives a set's mapping of resource paths to URL
	// paths below its ResourceBase (see publish.Set.Loc); nil, or a nil
	// result, means scan.EscapePath.
	ResourceLoc func(set string) func(path string) string
	// MaxEntries per payload (default 1000): a burst becomes several
	// notifications (RS-CN-4).
	MaxEntries int
	Logger     *slog.Logger
	Now        func() time.Time

	mu   sync.Mutex
	last map[string][]byte // last payload per set, served on the topic URL
}

const (
	metaSeq   = "notify.seq"
	metaUntil = "notify.until"
)

func (n *Notifier) now() time.Time {
	if n.Now != nil {
		return n.Now()
	}
	return time.Now()
}

// Init starts the channel of set at the journal's current end, unless it
// was started before: records already in the journal are in the Change
// Lists; notifications cover what comes after.
func (n *Notifier) Init(ctx context.Context, set string, st store.Store) error {
	if _, err := st.GetMeta(ctx, metaSeq); err == nil {
		return nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	stats, err := st.Stats(ctx)
	if err != nil {
		return err
	}
	from := n.now().UTC()
	if stats.LastSeq == 0 {
		// Nothing changed since the baseline (the first scan, which the
		// first Resource List describes): the first notification continues
		// from it, so a Destination that baselined there can apply it.
		if bt, ok, err := store.BaselineTime(ctx, st); err != nil {
			return err
		} else if ok && bt.Before(from) {
			from = bt
		}
	}
	if err := st.PutMeta(ctx, metaUntil, []byte(from.Format(time.RFC3339Nano))); err != nil {
		return err
	}
	return st.PutMeta(ctx, metaSeq, []byte(strconv.FormatUint(stats.LastSeq, 10)))
}

// Notify publishes every record of set's journal not notified yet. Call it
// after each update and now and then to retry after a failure.
func (n *Notifier) Notify(ctx context.Context, set string, st store.Store) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.Init(ctx, set, st); err != nil {
		return err
	}
	seqB, err := st.GetMeta(ctx, metaSeq)
	if err != nil {
		return err
	}
	seq, err := strconv.ParseUint(string(seqB), 10, 64)
	if err != nil {
		return fmt.Errorf("notify: bad %s %q", metaSeq, seqB)
	}
	untilB, err := st.GetMeta(ctx, metaUntil)
	if err != nil {
		return err
	}
	from, err := time.Parse(time.RFC3339Nano, string(untilB))
	if err != nil {
		return fmt.Errorf("notify: bad %s %q", metaUntil, untilB)
	}
	max := n.MaxEntries
	if max <= 0 {
		max = 1000
	}
	base := n.ResourceBase(set)
	var batch []store.Change
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		until := from
		for _, c := range batch {
			if c.Time.After(until) {
				until = c.Time
			}
		}
		body, err := n.payload(set, base, from, until, batch)
		if err != nil {
			return err
		}
		if err := n.Pub.Publish(ctx, n.Topic(set), ContentType, body, n.links(set)); err != nil {
			return err
		}
		// Acknowledged: move the channel's position.
		last := batch[len(batch)-1].Seq
		if err := st.PutMeta(ctx, metaUntil, []byte(until.UTC().Format(time.RFC3339Nano))); err != nil {
			return err
		}
		if err := st.PutMeta(ctx, metaSeq, []byte(strconv.FormatUint(last, 10))); err != nil {
			return err
		}
		if n.last == nil {
			n.last = map[string][]byte{}
		}
		n.last[set] = body
		if n.Logger != nil {
			n.Logger.Debug("notify: published", "set", set, "entries", len(batch), "from", from, "until", until)
		}
		from = until
		batch = batch[:0]
		return nil
	}
	for c, err := range st.Journal(ctx, seq+1) {
		if err != nil {
			return err
		}
		batch = append(batch, c)
		if len(batch) >= max {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}

func (n *Notifier) links(set string) []string {
	ls := []string{fmt.Sprintf("<%s>; rel=\"self\"", n.Topic(set)), fmt.Sprintf("<%s>; rel=\"hub\"", n.Hub)}
	if n.CapabilityList != nil {
		ls = append(ls, fmt.Sprintf("<%s>; rel=\"resourcesync\"", n.CapabilityList(set)))
	}
	return ls
}

func (n *Notifier) payload(set, base string, from, until time.Time, batch []store.Change) ([]byte, error) {
	ps := &publish.Set{ResourceBase: base}
	if n.ResourceLoc != nil {
		ps.Loc = n.ResourceLoc(set)
	}
	var buf bytes.Buffer
	enc := rs.NewEncoder(&buf)
	h := &rs.Head{MD: rs.Metadata{Capability: rs.CapChangeNotification, From: rs.NewTime(from.UTC()), Until: rs.NewTime(until.UTC())}}
	if n.CapabilityList != nil {
		h.Links = []rs.Link{{Rel: rs.RelUp, Href: n.CapabilityList(set)}}
	}
	if err := enc.WriteHead(h); err != nil {
		return nil, err
	}
	for i := range batch {
		e := publish.SetChangeEntry(ps, &batch[i])
		if err := enc.WriteEntry(&e); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// TopicHandler serves the topic URL of set (RS-WS-1): 200, application/xml,
// Link rel="self" and rel="hub", and the most recent payload.
func (n *Notifier) TopicHandler(set string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		n.mu.Lock()
		body := n.last[set]
		n.mu.Unlock()
		w.Header().Set("Content-Type", ContentType)
		for _, l := range n.links(set) {
			w.Header().Add("Link", l)
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if r.Method == http.MethodGet {
			w.Write(body)
		}
	})
}
