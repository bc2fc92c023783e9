package push

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourcesync-go/resourcesync/httperr"
	"github.com/resourcesync-go/resourcesync/internal/retry"
)

// Item is one fragment to push (SD-PUSH-1..5).
type Item struct {
	// Seq is the item's position in its stream; after a 2xx the sender's
	// cursor becomes Seq. Items come in ascending Seq order, but for items
	// with Seq 0, which are delivered without moving the cursor (an
	// initial pass over state that has no positions).
	Seq      uint64
	Resource string // the resource IRI (query parameter resource)
	Graph    string // the collection at the receiver (query parameter graph); "" omits it
	Body     []byte // the fragment as N-Triples; empty means the resource was deleted
	// Updated is the instant of the change the item carries, sent as
	// HeaderUpdated so that a receiver can refuse an older copy that
	// arrives late (a retry or a duplicate); zero sends Seq as
	// HeaderSequence instead, or neither when Seq is 0 too.
	Updated time.Time
}

// Items yields the items with Seq > after in ascending Seq order. An error
// is yielded once and ends the iteration; the Sender then waits and starts
// again from its cursor.
type Items func(ctx context.Context, after uint64) iter.Seq2[Item, error]

// CursorStore keeps a receiver's position durably, so that a restarted
// sender resumes after the last item the receiver acknowledged.
type CursorStore interface {
	// LoadCursor returns the stored position, 0 when none was stored.
	LoadCursor(ctx context.Context) (uint64, error)
	// SaveCursor stores seq; it must be durable when it returns nil.
	SaveCursor(ctx context.Context, seq uint64) error
}

// StatusError is a receiver's non-2xx answer: the project's one status
// error (package httperr), its Body the start of the response body.
type StatusError = httperr.StatusError

// ErrRefused marks a non-retryable answer (a 4xx other than 408, 425 and
// 429): the sender keeps trying at its longest interval, since skipping the
// item would leave the receiver's copy wrong for good.
var ErrRefused = errors.New("push: receiver refused the fragment")

// Stats are a Sender's counters.
type Stats struct {
	Cursor    uint64 // last acknowledged Seq
	Delivered uint64 // 2xx answers
	Failures  uint64 // failed attempts (transport errors, non-2xx)
}

// Sender pushes a stream of fragments to one receiver, in order, at least
// once: each item is POSTed until the receiver answers 2xx, then the
// cursor is stored, then the next item is sent. A crash between the 2xx and
// the store repeats one item, which SD-PUSH-7 makes harmless.
type Sender struct {
	URL    string       // the receiver's base URL
	Client *http.Client // nil: http.DefaultClient
	Items  Items
	Cursor CursorStore
	// BaseDelay and MaxDelay bound the backoff between failed attempts
	// (defaults 100ms and 30s); a Retry-After from the receiver is honoured
	// up to MaxDelay.
	BaseDelay, MaxDelay time.Duration
	// Poll is how often the sender looks for new items when nobody called
	// Notify (default 5s).
	Poll time.Duration
	Log  *slog.Logger

	once      sync.Once
	wake      chan struct{}
	cursor    atomic.Uint64
	delivered atomic.Uint64
	failures  atomic.Uint64
}

func (s *Sender) init() { s.once.Do(func() { s.wake = make(chan struct{}, 1) }) }

// Notify tells a running sender that new items may be available. It never
// blocks.
func (s *Sender) Notify() {
	s.init()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Stats returns the sender's counters.
func (s *Sender) Stats() Stats {
	return Stats{Cursor: s.cursor.Load(), Delivered: s.delivered.Load(), Failures: s.failures.Load()}
}

func (s *Sender) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Run delivers items until ctx ends, and then returns ctx's error. Other
// errors (the cursor store failing) are returned at once.
func (s *Sender) Run(ctx context.Context) error {
	s.init()
	cur, err := s.Cursor.LoadCursor(ctx)
	if err != nil {
		return fmt.Errorf("push: load cursor for %s: %w", s.URL, err)
	}
	s.cursor.Store(cur)
	poll := s.Poll
	if poll <= 0 {
		poll = 5 * time.Second
	}
	for {
		var iterErr error
		for it, err := range s.Items(ctx, cur) {
			if err != nil {
				iterErr = err
				break
			}
			if it.Seq != 0 && it.Seq <= cur {
				continue
			}
			if err := s.deliver(ctx, it); err != nil {
				return err
			}
			if it.Seq == 0 {
				continue // unsequenced: delivered, the cursor stays
			}
			if err := s.Cursor.SaveCursor(ctx, it.Seq); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("push: save cursor for %s: %w", s.URL, err)
			}
			cur = it.Seq
			s.cursor.Store(cur)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if iterErr != nil {
			s.log().Warn("sdshare push: reading changes failed; retrying", "receiver", s.URL, "err", iterErr)
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-s.wake:
		case <-t.C:
		}
		t.Stop()
	}
}

// deliver POSTs it until a 2xx or the end of ctx.
func (s *Sender) deliver(ctx context.Context, it Item) error {
	base, maxd := s.BaseDelay, s.MaxDelay
	if base <= 0 {
		base = 100 * time.Millisecond
	}
	if maxd <= 0 {
		maxd = 30 * time.Second
	}
	pol := retry.Policy{Retries: retry.Forever, BaseDelay: base, MaxDelay: maxd, MaxRetryAfter: maxd}
	_, err := retry.Do(ctx, pol, func() (bool, error) {
		err := s.post(ctx, it)
		if err == nil || ctx.Err() != nil || retry.Retryable(err) {
			return true, err
		}
		// Skipping the item would leave the receiver's copy wrong for
		// good: a refusal is tried again at the longest interval.
		return true, retry.WithRetryAfter(fmt.Errorf("%w: %w", ErrRefused, err), maxd)
	}, func(n int, err error, wait time.Duration) error {
		s.failures.Add(1)
		s.log().Warn("sdshare push: delivery failed; retrying", "receiver", s.URL, "resource", it.Resource,
			"seq", it.Seq, "attempt", n, "wait", wait, "err", retry.Strip(err))
		return nil
	})
	if err != nil {
		return err
	}
	s.delivered.Add(1)
	return nil
}

// PushURL returns the URL an item is POSTed to: base with resource (and
// graph, when set) added to its query (SD-PUSH-2, SD-PUSH-3).
func PushURL(base, resource, graph string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("push: receiver URL: %w", err)
	}
	q := u.Query()
	q.Set("resource", resource)
	if graph != "" {
		q.Set("graph", graph)
	}
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func (s *Sender) post(ctx context.Context, it Item) error {
	u, err := PushURL(s.URL, it.Resource, it.Graph)
	if err != nil {
		return retry.Permanent(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(it.Body))
	if err != nil {
		return retry.Permanent(err)
	}
	req.Header.Set("Content-Type", "application/n-triples; charset=utf-8")
	switch {
	case !it.Updated.IsZero():
		req.Header.Set(HeaderUpdated, it.Updated.UTC().Format(time.RFC3339Nano))
	case it.Seq > 0:
		req.Header.Set(HeaderSequence, strconv.FormatUint(it.Seq, 10))
	}
	c := s.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return nil
	}
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	var e error = &StatusError{Method: http.MethodPost, URL: u, Code: resp.StatusCode, Body: strings.TrimSpace(string(msg))}
	if ra := retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ra > 0 {
		e = retry.WithRetryAfter(e, ra)
	}
	return e
}
