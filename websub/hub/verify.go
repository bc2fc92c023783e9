package hub

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/websub/hub/hubstore"
)

const userAgent = "resourcesync-hub/1 (WebSub)"

func (h *Hub) wakeVerifier() {
	select {
	case h.verifyWake <- struct{}{}:
	default:
	}
}

// verifier runs the due verification jobs this node claims: at most
// one per subscription key at a time, in the order they were requested,
// at most 32 at once. It claims again when woken (a new job on any node,
// a job done), when the next retry is due, and every ClaimTTL/3 (to renew
// the claims of jobs in progress and to take those of dead nodes).
func (h *Hub) verifier(ctx context.Context) {
	const slots = 32
	inflight := map[uint64]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(0)
	defer timer.Stop()
	renew := time.NewTicker(h.cfg.ClaimTTL / 3)
	defer renew.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-renew.C:
		case <-h.verifyWake:
		}
		next := time.Hour
		due, at, err := h.st.ClaimJobs(ctx, h.node, h.now(), h.cfg.ClaimTTL, slots)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !errors.Is(err, hubstore.ErrClosed) {
				h.log.Error("claiming verification jobs", "err", err)
			}
			next = time.Second
		}
		if !at.IsZero() {
			next = min(next, max(at.Sub(h.now()), time.Millisecond))
		}
		for _, j := range due {
			mu.Lock()
			busy := inflight[j.ID]
			inflight[j.ID] = true
			mu.Unlock()
			if busy {
				continue
			}
			wg.Add(1)
			go func(j hubstore.Job) {
				defer wg.Done()
				h.verify(ctx, &j)
				mu.Lock()
				delete(inflight, j.ID)
				mu.Unlock()
				h.wakeVerifier()
			}(j)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(next)
	}
}

func challenge() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// verifyURL appends the hub.* parameters to the callback's own query
// string, in a fixed order, without touching what is there (WS-HUB-14).
func verifyURL(callback string, params [][2]string) string {
	var b strings.Builder
	b.WriteString(callback)
	if strings.Contains(callback, "?") {
		if !strings.HasSuffix(callback, "?") && !strings.HasSuffix(callback, "&") {
			b.WriteByte('&')
		}
	} else {
		b.WriteByte('?')
	}
	for i, p := range params {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(url.QueryEscape(p[0]))
		b.WriteByte('=')
		b.WriteString(url.QueryEscape(p[1]))
	}
	return b.String()
}

// verify runs one verification of intent (WS-HUB-13..17) and applies
// the result.
func (h *Hub) verify(ctx context.Context, j *hubstore.Job) {
	ch := challenge()
	params := [][2]string{{"hub.mode", j.Mode}, {"hub.topic", j.Topic}, {"hub.challenge", ch},
		{"hub.lease_seconds", strconv.FormatInt(j.Lease, 10)}}
	if j.HasToken {
		params = append(params, [2]string{"hub.verify_token", j.VerifyToken})
	}
	started := h.now()
	ok, again, why := h.askCallback(ctx, verifyURL(j.Callback, params), ch)
	if ctx.Err() != nil {
		return // the job stays; it runs again after a restart
	}
	switch {
	case ok:
		if err := h.apply(j, started); err != nil {
			h.log.Error("applying verified request", "topic", j.Topic, "err", err)
			h.m.verifications.WithLabelValues("error").Inc()
			return
		}
		h.m.verifications.WithLabelValues("verified").Inc()
		h.log.Info("verified", "mode", j.Mode, "topic", j.Topic, "callback", j.Callback)
	case again && j.Attempts < len(h.cfg.VerifyRetrySchedule):
		j.NextAt = h.now().Add(retry.HalfJitter(h.cfg.VerifyRetrySchedule[j.Attempts]))
		j.Attempts++
		if err := h.st.UpdateJob(context.Background(), *j); err != nil {
			h.log.Error("rescheduling verification", "err", err)
		}
		h.m.verifications.WithLabelValues("retry").Inc()
		h.log.Info("verification will be retried", "topic", j.Topic, "callback", j.Callback, "reason", why)
	default:
		h.deleteJob(j)
		h.m.verifications.WithLabelValues("failed").Inc()
		h.log.Info("verification failed; state unchanged", "mode", j.Mode, "topic", j.Topic, "callback", j.Callback, "reason", why)
	}
}

var errTooManyPending = errors.New("too many verifications pending for this callback host and port; try later")

// addJob stores a new verification job, within the pending limits.
func (h *Hub) addJob(ctx context.Context, j *hubstore.Job) error {
	j.Host = authorityOf(j.Callback)
	stored, err := h.st.AddJob(ctx, *j, h.cfg.MaxPendingVerifications, h.cfg.MaxPendingPerHost)
	if errors.Is(err, hubstore.ErrTooManyJobs) {
		return errTooManyPending
	}
	if err != nil {
		return err
	}
	*j = stored
	return nil
}

func (h *Hub) deleteJob(j *hubstore.Job) {
	if err := h.st.DeleteJob(context.Background(), j.ID); err != nil {
		h.log.Error("deleting verification job", "err", err)
	}
}

// askCallback sends the verification GET: success is any 2xx whose body
// is exactly the challenge; redirects are not followed. again is set for
// transport errors and the statuses internal/retry calls retryable (408,
// 425, 429, 5xx but 501 and 505).
func (h *Hub) askCallback(ctx context.Context, u, ch string) (ok, again bool, why string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, false, err.Error()
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := h.client.Do(req)
	if err != nil {
		return false, true, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(len(ch))+1))
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case err != nil:
		return false, true, err.Error()
	case resp.StatusCode < 200 || resp.StatusCode > 299:
		return false, retry.RetryableStatus(resp.StatusCode), "callback answered " + resp.Status
	case string(body) != ch:
		return false, false, fmt.Sprintf("callback answered %s without echoing the challenge", resp.Status)
	}
	return true, false, ""
}

// apply changes the subscription state after a successful verification,
// and removes the job, in one transaction (WS-HUB-9).
func (h *Hub) apply(j *hubstore.Job, started time.Time) error {
	ctx := context.Background()
	if j.Mode == "unsubscribe" {
		if err := h.st.Unsubscribe(ctx, j.ID, j.Key); err != nil {
			return err
		}
		h.mu.Lock()
		if s := h.subs[j.Key]; s != nil {
			h.removeSubLocked(s)
		}
		h.mu.Unlock()
		return nil
	}
	expires := started.Add(time.Duration(j.Lease) * time.Second)
	rec, err := h.st.Subscribe(ctx, j.ID, hubstore.Subscription{Key: j.Key, Topic: j.Topic, Callback: j.Callback,
		Secret: j.Secret, Lease: j.Lease, Expires: expires}, h.cfg.MaxSubscriptionsPerTopic)
	if errors.Is(err, hubstore.ErrTopicFull) {
		h.log.Info("subscription refused: topic full", "topic", j.Topic)
		return nil
	}
	if errors.Is(err, hubstore.ErrInvalid) { // for good (a job stored before the store checked it): drop it
		h.log.Warn("subscription refused by the store", "topic", j.Topic, "err", err)
		h.deleteJob(j)
		return nil
	}
	if err != nil {
		return err
	}
	h.mu.Lock()
	s := h.subs[j.Key]
	h.mu.Unlock()
	if s != nil { // held here: take the new secret and lease at once
		s.mu.Lock()
		s.rec.Callback, s.rec.Secret, s.rec.Lease, s.rec.Expires = rec.Callback, rec.Secret, rec.Lease, rec.Expires
		s.mu.Unlock()
		s.wake()
		return nil
	}
	h.kickClaim()
	return nil
}
