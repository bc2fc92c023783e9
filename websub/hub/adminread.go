package hub

import (
	"context"
	"time"
)

// SubscriptionState is a subscription with its delivery state, for admin
// and status pages (secrets omitted).
type SubscriptionState struct {
	Topic    string    `json:"topic"`
	Callback string    `json:"callback"`
	Expires  time.Time `json:"expires"`
	// Cursor is the last notification delivered (or dead-lettered), Head
	// the topic's last one; Backlog = Head − Cursor is what the
	// subscriber has still to receive.
	Cursor  uint64 `json:"cursor"`
	Head    uint64 `json:"head"`
	Backlog uint64 `json:"backlog"`
	// Failures counts the failed attempts at the next notification (0
	// when the last attempt succeeded); FailingSince is the first of them,
	// NextAttempt when the hub tries again (zero: at once), LastError the
	// reason of the last failure. All from the store: every node's.
	Failures     int       `json:"failures"`
	FailingSince time.Time `json:"failing_since"`
	NextAttempt  time.Time `json:"next_attempt"`
	LastError    string    `json:"last_error"`
	// LastAttempt is when this node last began a delivery attempt to the
	// subscription (zero when it has made none since it started: another
	// node may deliver it).
	LastAttempt time.Time `json:"last_attempt"`
	// Held: this node delivers the subscription.
	Held      bool `json:"held"`
	HasSecret bool `json:"has_secret"`
}

// SubscriptionStates returns the subscriptions of topic ("" for all), of
// all nodes sharing the state, in the store's order: at most limit of
// them after skipping offset, and whether more follow. Memory does not
// grow with the number of subscriptions (the store is read in pages).
func (h *Hub) SubscriptionStates(ctx context.Context, topic string, offset, limit int) ([]SubscriptionState, bool, error) {
	var out []SubscriptionState
	heads := map[string]uint64{}
	i := 0
	for r, err := range h.st.Subscriptions(ctx, topic) {
		if err != nil {
			return nil, false, err
		}
		if i++; i <= offset {
			continue
		}
		if len(out) == limit {
			return out, true, nil
		}
		head, ok := heads[r.Topic]
		if !ok {
			var err error
			if head, err = h.st.Head(ctx, r.Topic); err != nil {
				return nil, false, err
			}
			heads[r.Topic] = head
		}
		st := SubscriptionState{Topic: r.Topic, Callback: r.Callback, Expires: r.Expires, HasSecret: r.Secret != ""}
		h.mu.Lock()
		s := h.subs[r.Key]
		h.mu.Unlock()
		if s != nil {
			// Held here: the delivery state in memory is the newest.
			s.mu.Lock()
			r.Cursor = max(r.Cursor, s.rec.Cursor)
			r.Attempt, r.FirstFail, r.NextAt, r.LastError = s.rec.Attempt, s.rec.FirstFail, s.rec.NextAt, s.rec.LastError
			st.LastAttempt, st.Held = s.last, true
			s.mu.Unlock()
		}
		st.Cursor, st.Head = r.Cursor, max(head, r.Cursor)
		st.Backlog = st.Head - st.Cursor
		st.Failures, st.FailingSince, st.NextAttempt, st.LastError = r.Attempt, r.FirstFail, r.NextAt, r.LastError
		out = append(out, st)
	}
	return out, false, nil
}

// CountSubscriptions counts the subscriptions of topic ("" for all).
func (h *Hub) CountSubscriptions(ctx context.Context, topic string) (int, error) {
	if topic == "" {
		c, err := h.st.Counts(ctx)
		return c.Subscriptions, err
	}
	return h.st.CountSubscriptions(ctx, topic)
}

// DeadLetterPage returns at most limit dead letters (bodies omitted)
// after skipping offset, in ID order, and whether more follow.
func (h *Hub) DeadLetterPage(ctx context.Context, offset, limit int) ([]DeadLetter, bool, error) {
	var out []DeadLetter
	i := 0
	for d, err := range h.st.DeadLetters(ctx) {
		if err != nil {
			return nil, false, err
		}
		if i++; i <= offset {
			continue
		}
		if len(out) == limit {
			return out, true, nil
		}
		d.Body = nil
		out = append(out, d)
	}
	return out, false, nil
}

// Nodes is the number of live hub nodes sharing the state, this one
// included, as of the last claim round (1 with the embedded store).
func (h *Hub) Nodes() int {
	return max(int(h.nodes.Load()), 1)
}
