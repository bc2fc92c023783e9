package hub

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/resourcesync-go/resourcesync/internal/retry"
)

const userAgent = "resourcesync-hub/1 (WebSub)"

func (h *Hub) wakeVerifier() {
	select {
	case h.verifyWake <- struct{}{}:
	default:
	}
}

// verifier runs the due verification jobs: at most one per subscription
// key at a time, in the order they were requested, at most 32 at once.
func (h *Hub) verifier(ctx context.Context) {
	inflight := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	defer wg.Wait()
	sem := make(chan struct{}, 32)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-h.verifyWake:
		}
		jobs := h.pendingJobs()
		next := time.Hour
		now := h.now()
		seenKey := map[string]bool{}
		for _, j := range jobs { // in ID order
			if seenKey[j.Key] {
				continue
			}
			seenKey[j.Key] = true
			mu.Lock()
			busy := inflight[j.Key]
			mu.Unlock()
			if busy {
				continue
			}
			if wait := j.NextAt.Sub(now); wait > 0 {
				next = min(next, wait)
				continue
			}
			mu.Lock()
			inflight[j.Key] = true
			mu.Unlock()
			wg.Add(1)
			go func(j job) {
				defer wg.Done()
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				h.verify(ctx, &j)
				<-sem
				mu.Lock()
				delete(inflight, j.Key)
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
func (h *Hub) verify(ctx context.Context, j *job) {
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
		if err := h.saveJob(j); err != nil {
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
func (h *Hub) addJob(j *job) error {
	host := authorityOf(j.Callback)
	h.jobsMu.Lock()
	defer h.jobsMu.Unlock()
	if len(h.pending) >= h.cfg.MaxPendingVerifications || h.pendingHost[host] >= h.cfg.MaxPendingPerHost {
		return errTooManyPending
	}
	if err := h.st.putJob(j); err != nil {
		return err
	}
	h.pending[j.ID] = *j
	h.pendingHost[host]++
	return nil
}

// saveJob stores a rescheduled job.
func (h *Hub) saveJob(j *job) error {
	h.jobsMu.Lock()
	defer h.jobsMu.Unlock()
	if err := h.st.putJob(j); err != nil {
		return err
	}
	h.pending[j.ID] = *j
	return nil
}

// forgetJob drops a job from memory once its record is deleted.
func (h *Hub) forgetJob(j *job) {
	h.jobsMu.Lock()
	defer h.jobsMu.Unlock()
	if _, ok := h.pending[j.ID]; ok {
		delete(h.pending, j.ID)
		host := authorityOf(j.Callback)
		if h.pendingHost[host]--; h.pendingHost[host] <= 0 {
			delete(h.pendingHost, host)
		}
	}
}

// pendingJobs returns the pending jobs in ID (request) order.
func (h *Hub) pendingJobs() []job {
	h.jobsMu.Lock()
	out := make([]job, 0, len(h.pending))
	for _, j := range h.pending {
		out = append(out, j)
	}
	h.jobsMu.Unlock()
	slices.SortFunc(out, func(a, b job) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

func (h *Hub) deleteJob(j *job) {
	err := h.st.db.Update(func(tx *bbolt.Tx) error { return tx.Bucket(bVerif).Delete(u64(j.ID)) })
	if err != nil {
		h.log.Error("deleting verification job", "err", err)
		return
	}
	h.forgetJob(j)
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
func (h *Hub) apply(j *job, started time.Time) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	old := h.subs[j.Key]
	var rec subRecord
	var capped bool
	if j.Mode == "unsubscribe" && old != nil {
		// Marked before the delete commits, so that a cursor flush
		// cannot write the record back.
		old.mu.Lock()
		old.removed = true
		old.mu.Unlock()
	}
	err := h.st.db.Update(func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bVerif).Delete(u64(j.ID)); err != nil {
			return err
		}
		if j.Mode == "unsubscribe" {
			return tx.Bucket(bSubs).Delete([]byte(j.Key))
		}
		if old == nil {
			if ts := h.topics[j.Topic]; ts != nil && len(ts.subs) >= h.cfg.MaxSubscriptionsPerTopic {
				capped = true
				return nil
			}
		}
		cur, err := getSub(tx, j.Key)
		if err != nil {
			return err
		}
		expires := started.Add(time.Duration(j.Lease) * time.Second)
		if old != nil {
			// Updated in memory inside the transaction, so that a
			// concurrent cursor flush cannot write the old secret back.
			old.mu.Lock()
			old.rec.Callback, old.rec.Secret, old.rec.Lease, old.rec.Expires = j.Callback, j.Secret, j.Lease, expires
			rec = old.rec
			old.mu.Unlock()
		} else {
			if cur != nil {
				rec = *cur
			} else {
				rec = subRecord{Cursor: head(tx, j.Topic)}
			}
			rec.Topic, rec.Callback, rec.Secret, rec.Lease, rec.Expires = j.Topic, j.Callback, j.Secret, j.Lease, expires
		}
		return putSub(tx, j.Key, &rec)
	})
	if err == nil {
		h.forgetJob(j)
	} else if j.Mode == "unsubscribe" && old != nil {
		old.mu.Lock()
		old.removed = false
		old.mu.Unlock()
	}
	if err != nil || capped {
		if capped {
			h.log.Info("subscription refused: topic full", "topic", j.Topic)
		}
		return err
	}
	if j.Mode == "unsubscribe" {
		if old != nil {
			h.removeSubLocked(old)
		}
		return nil
	}
	if old != nil {
		old.wake()
		return nil
	}
	s := newSub(rec)
	h.subs[s.key] = s
	h.topic(rec.Topic).subs[s.key] = s
	h.m.subscriptions.Set(float64(len(h.subs)))
	h.startSubLocked(s)
	return nil
}
