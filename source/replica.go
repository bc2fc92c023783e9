package source

import (
	"context"
	"errors"
	"time"
)

// Replicas. When the sets' stores are shared (store.Shared: one database,
// several Source processes serving the same directories behind one base
// URL), each set has one scanner at a time, the process that holds its
// Lead role:
//
//   - the leader scans, journals and publishes (publish.Config.Replicas:
//     the decisions that depend on its clock go to the meta), and stops
//     writing as soon as the role is lost: the update in progress is
//     canceled with the role's context;
//   - every process, leader included, renders its own copy of the
//     documents from the store and that meta when Watch signals a commit,
//     so that all of them serve the same bytes (see publish.Set.Follow);
//   - a process that takes the role over renders first (its tree is then
//     what the meta describes), then scans the whole directory against the
//     shared inventory: the journal continues from the last committed
//     record, without a gap or a duplicate.

// LeadAll waits until this process holds the scanner role of every shared
// set (at once) or ctx ends; release gives them back. Without shared
// stores it returns at once. publish uses it: a one-shot update by one
// process among replicas.
func (s *Source) LeadAll(ctx context.Context) (release func(), err error) {
	var releases []func()
	release = func() {
		for _, r := range releases {
			r()
		}
	}
	for _, st := range s.sets {
		if st.shared == nil {
			continue
		}
		lost, rel, err := st.shared.Lead(ctx)
		if err != nil {
			release()
			return nil, err
		}
		// The role lasts until release or loss: ctx bounds only the wait
		// (publish waits at most a while for a serve replica's role).
		lctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-lost:
			case <-lctx.Done():
			}
			cancel()
		}()
		st.lead.Store(&lctx)
		releases = append(releases, func() {
			st.lead.Store(nil)
			cancel()
			rel()
		})
	}
	return release, nil
}

// leadLoop holds, loses and takes again the scanner role of st until ctx
// ends; it sends on acquired each time it takes the role.
func (s *Source) leadLoop(ctx context.Context, st *set, acquired chan<- struct{}) {
	for ctx.Err() == nil {
		lost, release, err := st.shared.Lead(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			s.log.Warn("cannot take the scanner role; retrying", "set", st.name, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
			continue
		}
		select { // a request of an earlier holding
		case <-st.yield:
		default:
		}
		lctx, cancel := context.WithCancel(ctx)
		st.lead.Store(&lctx)
		s.log.Info("scanner role taken", "set", st.name)
		if s.cfg.OnLead != nil {
			if err := s.cfg.OnLead(lctx, st.name, st.st); err != nil && lctx.Err() == nil {
				s.log.Warn("on taking the scanner role", "set", st.name, "err", err)
			}
		}
		select {
		case acquired <- struct{}{}:
		default:
		}
		yielded := false
		select {
		case <-lost:
			s.log.Warn("scanner role lost: no longer writing", "set", st.name)
		case <-st.yield:
			s.log.Warn("scanner role given up for a while: this replica's directory is empty (not mounted?); another replica may scan", "set", st.name, "dir", st.dir, "pause", yieldPause)
			yielded = true
		case <-ctx.Done():
		}
		cancel() // before anything else: an update in progress stops writing
		st.lead.Store(nil)
		release()
		if yielded {
			select {
			case <-ctx.Done():
				return
			case <-time.After(yieldPause):
			}
		}
	}
}

// yieldPause is how long a replica that gave the scanner role up (its
// directory empty) waits before it competes for the role again. A
// variable for tests.
var yieldPause = 30 * time.Second

// watchShared returns a channel that receives a value after commits to any
// shared set's state (coalesced).
func (s *Source) watchShared(ctx context.Context) (<-chan struct{}, error) {
	out := make(chan struct{}, 1)
	for _, st := range s.sets {
		if st.shared == nil {
			continue
		}
		w, err := st.shared.Watch(ctx)
		if err != nil {
			return nil, err
		}
		go func() {
			for range w {
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}()
	}
	return out, nil
}

// renderRetry is how soon a render that was behind (the inventory moved on
// since the leader published) is tried again, should no commit signal
// come first.
const renderRetry = 500 * time.Millisecond

// render renders a replica's documents and reports whether a set is
// behind.
func (s *Source) render(ctx context.Context) (behind bool) {
	rep, err := s.Render(ctx)
	if err != nil {
		// Logged once until it changes: a render retried every
		// renderRetry must not fill the log (a replica whose settings
		// differ from the leader's fails every time).
		if ctx.Err() == nil && !errors.Is(err, context.Canceled) && err.Error() != s.renderErr {
			s.log.Error("render failed", "err", err)
			s.renderErr = err.Error()
		}
		return true
	}
	if s.renderErr != "" {
		s.log.Info("render succeeds again")
		s.renderErr = ""
	}
	for _, sr := range rep.Publish.Sets {
		behind = behind || sr.Behind
	}
	return behind
}

// Leads reports whether this process holds the scanner role of set (always
// true for a set whose store is not shared): only the leader writes to the
// set's state, change-notification cursors included.
func (s *Source) Leads(set string) bool {
	for _, st := range s.sets {
		if st.name == set {
			_, ok := st.leads()
			return ok
		}
	}
	return false
}
