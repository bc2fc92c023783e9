package status

import (
	"time"

	"github.com/resourcesync-go/resourcesync/source/store"
)

// bytesState is a set's total size: the last pass over its inventory.
type bytesState struct {
	valid     bool          // a pass ended without error
	sum       int64         // the sizes it added up
	resources int           // the inventory's count and
	seq       uint64        // the journal's last seq when it started
	exact     bool          // nothing changed during the pass
	at        time.Time     // Config.Now when it ended
	ended     time.Time     // wall clock when it ended (successful or not)
	took      time.Duration // its duration
	running   chan struct{} // closed when the pass in progress ends
}

// bytesView is what the page shows of a set's size.
type bytesView struct {
	Known   bool
	Sum     int64
	At      time.Time
	Current bool // the sum is of the state the page shows
	Running bool
}

// startBytes starts a pass over s's inventory when the set changed since
// the last one and the pause after it is over.
func (h *Handler) startBytes(s Set, stats store.Stats) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.bytes[s.Name]
	if b == nil || b.running != nil || h.ctx.Err() != nil {
		return
	}
	if b.valid && b.exact && b.seq == stats.LastSeq && b.resources == stats.Resources {
		return // nothing changed (touches change no size)
	}
	if !b.ended.IsZero() && h.cfg.BytesInterval >= 0 {
		pause := max(h.cfg.BytesInterval, 50*b.took)
		if time.Since(b.ended) < pause {
			return
		}
	}
	done := make(chan struct{})
	b.running = done
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer close(done)
		start := time.Now()
		var sum int64
		n := 0
		var err error
		for r, e := range s.Store.ResourcesIn(h.ctx, "", "") {
			if e != nil {
				err = e
				break
			}
			sum += r.Size
			n++
		}
		after, aerr := s.Store.Stats(h.ctx)
		h.mu.Lock()
		defer h.mu.Unlock()
		b.running = nil
		b.ended, b.took = time.Now(), time.Since(start)
		if err != nil || aerr != nil {
			if h.ctx.Err() == nil {
				h.cfg.Logger.Warn("status page: summing the sizes", "set", s.Name, "err", err, "stats", aerr)
			}
			return
		}
		b.valid, b.sum, b.at = true, sum, h.cfg.Now().UTC()
		b.resources, b.seq = stats.Resources, stats.LastSeq
		b.exact = after.LastSeq == stats.LastSeq && after.Resources == stats.Resources && n == stats.Resources
	}()
}

// bytesOf says what is known of a set's size for the state stats.
func (h *Handler) bytesOf(set string, stats store.Stats) bytesView {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.bytes[set]
	if b == nil {
		return bytesView{}
	}
	return bytesView{Known: b.valid, Sum: b.sum, At: b.at, Running: b.running != nil,
		Current: b.valid && b.exact && b.seq == stats.LastSeq && b.resources == stats.Resources}
}
