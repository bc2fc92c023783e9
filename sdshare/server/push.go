package server

import (
	"context"
	"encoding/binary"
	"errors"
	"iter"
	"net/http"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/push"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// pushWorker pushes one collection's journal to one receiver. Its cursor
// (the journal seq the receiver acknowledged last) lives in the
// collection's state store, so a restart resumes where it stopped.
type pushWorker struct {
	c      *Collection
	sender *push.Sender
}

// pushMetaPrefix + receiver URL is the meta key of a receiver's cursor.
const pushMetaPrefix = "sdshare.push.cursor:"

type metaCursor struct {
	st  store.Store
	key string
}

func (m metaCursor) LoadCursor(ctx context.Context) (uint64, error) {
	b, err := m.st.GetMeta(ctx, m.key)
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(b) != 8 {
		return 0, store.ErrCorrupt
	}
	return binary.BigEndian.Uint64(b), nil
}

func (m metaCursor) SaveCursor(ctx context.Context, seq uint64) error {
	return m.st.PutMeta(ctx, m.key, binary.BigEndian.AppendUint64(nil, seq))
}

func newPushWorker(s *Server, c *Collection, receiver string) *pushWorker {
	cl := s.cfg.PushClient
	if cl == nil {
		cl = &http.Client{Timeout: 30 * time.Second}
	}
	w := &pushWorker{c: c}
	w.sender = &push.Sender{
		URL: receiver, Client: cl, Cursor: metaCursor{c.st, pushMetaPrefix + receiver},
		BaseDelay: s.cfg.PushBaseDelay, MaxDelay: s.cfg.PushMaxDelay, Log: s.log.With("collection", c.name),
		Items: func(ctx context.Context, after uint64) iter.Seq2[push.Item, error] {
			return c.pushItems(ctx, pushMetaPrefix+receiver, after)
		},
	}
	c.OnChange(w.sender.Notify)
	return w
}

// run runs the sender until ctx ends; a failure of the state store stops
// a Sender, so it is logged and the sender restarted from its stored
// cursor after a pause.
func (w *pushWorker) run(ctx context.Context) {
	for {
		err := w.sender.Run(ctx)
		if ctx.Err() != nil {
			return
		}
		w.c.srv.log.Error("sdshare push stopped; restarting", "collection", w.c.name, "receiver", w.sender.URL, "err", err)
		if retry.Sleep(ctx, time.Second) != nil {
			return
		}
	}
}

// initialPush gives a receiver the collection as it is before its first
// journal record: the baseline and everything journaled before the
// receiver was added are not in the journal it will be sent. So, while
// the receiver has no cursor, every resource's current fragment is pushed
// (unsequenced, Seq 0), and then the cursor is set to the journal's last
// seq read before the pass: the fragments sent are at least that new, and
// a record after it is sent again later, which is harmless. A restart in
// the middle repeats the pass. It returns the seq the journal continues
// after, and false when yield asked to stop.
func (c *Collection) initialPush(ctx context.Context, key string, after uint64, yield func(push.Item, error) bool) (uint64, bool, error) {
	if _, err := c.st.GetMeta(ctx, key); err == nil {
		return after, true, nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return 0, false, err
	}
	st, err := c.st.Stats(ctx)
	if err != nil {
		return 0, false, err
	}
	// Collect first: a bolt read transaction must not stay open while the
	// receiver is slow.
	type res struct {
		iri     string
		changed time.Time
	}
	var all []res
	for r, err := range c.st.Resources(ctx) {
		if err != nil {
			return 0, false, err
		}
		all = append(all, res{r.Path, r.Changed})
	}
	for _, r := range all {
		body, err := c.Fragment(ctx, r.iri, rdf.NTriples)
		if err != nil {
			return 0, false, err
		}
		if !yield(push.Item{Resource: r.iri, Graph: c.URL(), Body: body, Updated: r.changed}, nil) {
			return 0, false, nil
		}
	}
	if err := (metaCursor{c.st, key}).SaveCursor(ctx, st.LastSeq); err != nil {
		return 0, false, err
	}
	return max(after, st.LastSeq), true, nil
}

// pushItems yields the journal records after after, each with the
// resource's current fragment (SD-SRV-28: the current state, which is at
// least as new as the record). Records newer than the loaded graph wait
// for it.
func (c *Collection) pushItems(ctx context.Context, key string, after uint64) iter.Seq2[push.Item, error] {
	return func(yield func(push.Item, error) bool) {
		after, more, err := c.initialPush(ctx, key, after, yield)
		if err != nil {
			yield(push.Item{}, err)
			return
		}
		if !more {
			return
		}
		for ch, err := range c.st.Journal(ctx, after+1) {
			if err != nil {
				yield(push.Item{}, err)
				return
			}
			v := c.version()
			if ch.Seq > v.seq {
				return
			}
			body, err := c.Fragment(ctx, ch.Path(), rdf.NTriples)
			if err != nil {
				yield(push.Item{}, err)
				return
			}
			if !yield(push.Item{Seq: ch.Seq, Resource: ch.Path(), Graph: c.URL(), Body: body, Updated: ch.Time}, nil) {
				return
			}
		}
	}
}
