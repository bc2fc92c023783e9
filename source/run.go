package source

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/source/scan"
)

// RunOptions say when Run updates the Source.
type RunOptions struct {
	// RescanInterval, if positive, updates at this interval.
	RescanInterval time.Duration
	// Watch updates on filesystem events, debounced: only the paths
	// named by the events are scanned (a full scan after an event
	// overflow, or when more than MaxWatchPaths distinct paths are
	// pending); RescanInterval's full scans remain the safety net for
	// events a watch cannot see.
	Watch bool
	// Watcher, if set, is the watch Run uses (Watch is then implied): made
	// with Source.Watch before the first Update, it sees every change
	// made after that Update's scan started, which a watch Run installs
	// itself could miss (changes between the Update and the watch).
	Watcher *Watcher
	// Debounce is how long events must be quiet before an update
	// (default 100ms); MaxDelay caps the wait under a steady stream of
	// events (default 2s). On Linux the watch sees when a file written
	// in place is closed (IN_CLOSE_WRITE): a change whose file is
	// complete (closed, moved in, linked, removed) is scanned at once,
	// with whatever else has queued meanwhile, which is the coalescing
	// under bursts; a file still open for writing waits for its close,
	// at most MaxDelay, so that no digest of a half-written file is
	// published; Debounce applies once more than maxWatchPaths paths
	// are pending (one full scan), and bounds the pause after an update
	// (as long as the update took, so that a burst coalesces; a pause
	// of the whole update time doubled the p99 latency at 100 changes/s
	// on a loaded machine). A quiet period cannot tell a
	// finished writer from a pausing one, and at a steady rate above
	// 1/Debounce it never comes: every change then waited MaxDelay.
	Debounce, MaxDelay time.Duration
	// Trigger, if set, requests an update on each receive.
	Trigger <-chan struct{}
}

// maxWatchPaths is how many distinct paths named by events are scanned one
// by one; beyond that, one full scan.
const maxWatchPaths = 10000

// Run updates the Source when RunOptions say so until ctx is done. An
// update that fails is logged and retried at the next occasion.
//
// With shared stores (a replica, see LeadAll and publish.Set.Follow), Run
// also competes for each set's scanner role: only the sets it holds are
// scanned (on taking a role, the whole directory at once); and it renders
// the documents again whenever a commit is signalled by the store (Watch),
// whoever made it.
func (s *Source) Run(ctx context.Context, opt RunOptions) error {
	if opt.Debounce <= 0 {
		opt.Debounce = 100 * time.Millisecond
	}
	if opt.MaxDelay <= 0 {
		opt.MaxDelay = 2 * time.Second
	}
	var tick <-chan time.Time
	if opt.RescanInterval > 0 {
		t := time.NewTicker(opt.RescanInterval)
		defer t.Stop()
		tick = t.C
	}
	var events <-chan watchEvent
	var werrs <-chan error
	var wb watchBackend
	if opt.Watcher == nil && opt.Watch {
		wt, err := s.Watch()
		if err != nil {
			return err
		}
		defer wt.Close()
		opt.Watcher = wt
	}
	if opt.Watcher != nil {
		wb = opt.Watcher.b
		events, werrs = wb.events(), wb.errors()
	}
	var changed <-chan struct{}
	var acquired chan struct{}
	var retry <-chan time.Time
	if s.shared {
		c, err := s.watchShared(ctx)
		if err != nil {
			return err
		}
		changed = c
		acquired = make(chan struct{}, 1)
		for _, st := range s.sets {
			go s.leadLoop(ctx, st, acquired)
		}
	}
	render := func() {
		retry = nil
		if s.render(ctx) && ctx.Err() == nil {
			retry = time.After(renderRetry)
		}
	}
	var debounce <-chan time.Time
	var first time.Time
	var timer *time.Timer
	arm := func(wait time.Duration) {
		wait = max(wait, 0)
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		debounce = timer.C
	}
	// The paths named by events since their last scan, unless full: a
	// full scan is due anyway. Of those, open are the files written and
	// not closed yet (since when): where the watch reports closes (Linux),
	// the others are scanned at once and these wait for their close, at
	// most MaxDelay; elsewhere all wait for Debounce of quiet.
	pending := map[string]bool{}
	open := map[string]time.Time{}
	full := false
	fast := wb != nil && wb.closeWrite()
	// When the last update ended and how long it took: under a stream
	// of changes the next waits as long again, at most Debounce, so that
	// bursts coalesce.
	var lastEnd time.Time
	var lastDur time.Duration
	update := func(all bool, paths []string) {
		first = time.Time{}
		debounce = nil
		all = all || full
		if all {
			clear(pending)
			clear(open)
		}
		full = false
		start := time.Now()
		defer func() { lastEnd = time.Now(); lastDur = lastEnd.Sub(start) }()
		var rep Report
		var err error
		if all {
			rep, err = s.Update(ctx)
		} else {
			rep, err = s.UpdatePaths(ctx, paths)
		}
		if err != nil {
			switch {
			case ctx.Err() != nil:
			case s.shared && errors.Is(err, context.Canceled):
				s.log.Warn("update stopped: scanner role lost", "err", err)
			case Refused(err):
				s.log.Error("scan refused: nothing recorded as deleted, the last good state is served", "err", err)
			default:
				s.log.Error("update failed", "err", err)
			}
			full = !all // the paths' changes may not be recorded: scan them all next time
			if s.shared || !Refused(err) {
				return
			}
		}
		for name, st := range rep.Scans {
			switch {
			case st.Baseline:
				s.log.Info("baseline scanned (no changes recorded)", "set", name, "added", st.Created, "complete", st.BaselineDone, "took", time.Since(start).Round(time.Millisecond))
			case st.Created+st.Updated+st.Deleted > 0:
				s.log.Info("updated", "set", name, "created", st.Created, "updated", st.Updated, "deleted", st.Deleted, "files", st.Files, "full", all, "took", time.Since(start).Round(time.Millisecond))
			}
		}
	}
	takeAll := func() []string {
		paths := make([]string, 0, len(pending))
		for p := range pending {
			paths = append(paths, p)
		}
		clear(pending)
		clear(open)
		return paths
	}
	handle := func(ev watchEvent) {
		if ev.op == 0 || s.ignored(ev.name) {
			return
		}
		if ev.op&opCreate != 0 {
			if fi, err := os.Lstat(ev.name); err == nil {
				switch {
				case fi.IsDir():
					s.watchTree(wb, ev.name)
				case fast && ev.op&opMoved == 0 && fi.Mode().IsRegular() && linkCount(fi) <= 1:
					// Created by open(2): written until its close.
					// (A hard link is complete: no close follows.)
					if _, ok := open[ev.name]; !ok {
						open[ev.name] = time.Now()
					}
				}
			}
		}
		if fast {
			if ev.op&opWrite != 0 {
				if _, ok := open[ev.name]; !ok {
					open[ev.name] = time.Now()
				}
			}
			if ev.op&(opClosed|opMoved|opRemove|opRename) != 0 {
				delete(open, ev.name)
			}
		}
		if !full {
			pending[ev.name] = true
			if len(pending) > maxWatchPaths {
				full = true // cheaper as one walk
				clear(pending)
				clear(open)
			}
		}
		if first.IsZero() {
			first = time.Now()
		}
	}
	// schedule scans what the events so far allow, or sets the timer.
	schedule := func() {
		now := time.Now()
		if !fast || full {
			arm(min(opt.Debounce, opt.MaxDelay-now.Sub(first)))
			return
		}
		for p, t := range open {
			if now.Sub(t) >= opt.MaxDelay {
				delete(open, p) // written too long: scanned as it is
			}
		}
		if wait := lastEnd.Add(min(lastDur, opt.Debounce)).Sub(now); wait > 0 && len(pending) > 0 {
			arm(wait)
			return
		}
		if ready := s.readyPaths(pending, open); len(ready) > 0 {
			for _, p := range ready {
				delete(pending, p)
			}
			update(false, ready)
		}
		if len(pending) == 0 {
			first, debounce = time.Time{}, nil
			return
		}
		// Files still open (and the paths held back with them): at
		// their close, or MaxDelay after the oldest was first written.
		oldest := now
		for _, t := range open {
			if t.Before(oldest) {
				oldest = t
			}
		}
		arm(opt.MaxDelay - time.Since(oldest))
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick:
			update(true, nil)
		case <-opt.Trigger:
			update(true, nil)
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			handle(ev)
			// Take what else has queued (a burst), so that one scan
			// covers it; bounded, so that an endless stream still
			// gets scanned.
		drain:
			for range maxWatchPaths {
				select {
				case ev, ok := <-events:
					if !ok {
						events = nil
						break drain
					}
					handle(ev)
				default:
					break drain
				}
			}
			schedule()
		case err, ok := <-werrs:
			if !ok {
				werrs = nil
				continue
			}
			// Overflow loses events: a full rescan catches up.
			s.log.Warn("filesystem watch", "err", err)
			if errors.Is(err, errWatchOverflow) {
				update(true, nil)
			}
		case <-debounce:
			if fast && !full {
				schedule()
			} else {
				update(false, takeAll())
			}
		case <-changed:
			render()
		case <-retry:
			render()
		case <-acquired:
			// A role taken (at start or over from a replica that died):
			// the tree first becomes what the meta describes, then the
			// whole directory is compared with the shared inventory.
			render()
			update(true, nil)
		}
	}
}

// readyPaths returns the pending paths that can be scanned now: not open
// for writing, and whose scan would not read an open file - a path
// holding one (a new directory, the set's root), or more than
// scan.Coalesce paths of an open file's directory (ScanPaths reads such
// a directory whole).
func (s *Source) readyPaths(pending map[string]bool, open map[string]time.Time) []string {
	// The directories holding open files: a set, so that the cost is
	// the open files' depth, not pending × open.
	holding := map[string]bool{}
	for o := range open {
		for d := filepath.Dir(o); !holding[d]; d = filepath.Dir(d) {
			holding[d] = true
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	var ready []string
	perDir := map[string]int{}
	for p := range pending {
		if _, ok := open[p]; ok || holding[p] {
			continue
		}
		ready = append(ready, p)
		perDir[filepath.Dir(p)]++
	}
	if len(open) == 0 {
		return ready
	}
	crowded := map[string]bool{}
	for o := range open {
		if perDir[filepath.Dir(o)] > scan.Coalesce {
			crowded[filepath.Dir(o)] = true
		}
	}
	if len(crowded) == 0 {
		return ready
	}
	keep := ready[:0]
	for _, p := range ready {
		if !crowded[filepath.Dir(p)] {
			keep = append(keep, p)
		}
	}
	return keep
}

// Watcher watches a Source's directories for changes (see
// RunOptions.Watcher). Events queue in the kernel until Run reads them; a
// queue that overflows makes Run scan everything.
type Watcher struct{ b watchBackend }

// Watch installs a watch on every directory of the Source's sets.
func (s *Source) Watch() (*Watcher, error) {
	b, err := newWatchBackend()
	if err != nil {
		return nil, err
	}
	for _, st := range s.sets {
		if st.content == nil { // a Content is rescanned, not watched
			s.watchTree(b, st.dir)
		}
	}
	return &Watcher{b: b}, nil
}

// Close removes the watch.
func (w *Watcher) Close() error { return w.b.close() }

// ignored reports whether a path is the state, the output, or hidden.
func (s *Source) ignored(p string) bool {
	for _, ex := range []string{s.cfg.StateDir, s.out} {
		if ex != "" && (p == ex || strings.HasPrefix(p, ex+string(filepath.Separator))) {
			return true
		}
	}
	return strings.HasPrefix(filepath.Base(p), ".")
}

// watchTree watches root and the directories under it. The directories
// it cannot watch (the inotify watches spent, most often: serve watches
// by default) are logged once per call, with the first of them, rather
// than once each: a large tree would log thousands of lines.
func (s *Source) watchTree(w watchBackend, root string) {
	failed := 0
	var first string
	var firstErr error
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if p != root && s.ignored(p) {
			return filepath.SkipDir
		}
		if err := w.add(p); err != nil {
			if failed == 0 {
				first, firstErr = p, err
			}
			failed++
		}
		return nil
	})
	if failed > 0 {
		s.log.Warn("cannot watch directories; changes there are seen by the rescans (--rescan-interval); on Linux, raise fs.inotify.max_user_watches",
			"dirs", failed, "dir", first, "err", firstErr)
	}
}

// WatchBlind says why a watch (Source.Watch) would miss changes to the
// Source's directories - "DIR is on nfs" - or "" when it sees them: a
// network file system raises no event for a file another machine writes.
// serve watches by default only where it is "".
func (s *Source) WatchBlind() string {
	for _, st := range s.sets {
		if fs := networkFS(st.dir); fs != "" {
			return st.dir + " is on " + fs + ", where changes made by other machines raise no event"
		}
	}
	return ""
}
