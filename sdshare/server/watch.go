package server

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// watch reloads the collection on filesystem events (debounced) and on a
// periodic stat-based rescan, which also covers filesystems without events.
func (c *Collection) watch(ctx context.Context) {
	var tick <-chan time.Time
	if c.srv.cfg.Rescan > 0 {
		t := time.NewTicker(c.srv.cfg.Rescan)
		defer t.Stop()
		tick = t.C
	}
	var events <-chan fsnotify.Event
	var werrs <-chan error
	w, err := fsnotify.NewWatcher()
	if err != nil {
		c.srv.log.Warn("filesystem events unavailable; rescanning only", "collection", c.name, "err", err)
	} else {
		defer w.Close()
		c.addWatches(w)
		events, werrs = w.Events, w.Errors
	}
	fileMode := false
	if fi, err := os.Stat(c.path); err == nil && !fi.IsDir() {
		fileMode = true
	}
	clean := filepath.Clean(c.path)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			c.reload(ctx, false)
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if fileMode && filepath.Clean(ev.Name) != clean {
				continue
			}
			if !fileMode && strings.HasPrefix(filepath.Base(ev.Name), ".") {
				continue
			}
			if ev.Has(fsnotify.Create) && !fileMode {
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
					c.addWatches(w)
				}
			}
			timer.Reset(c.srv.cfg.Debounce)
		case err, ok := <-werrs:
			if !ok {
				werrs = nil
				continue
			}
			c.srv.log.Warn("filesystem watch", "collection", c.name, "err", err)
			timer.Reset(c.srv.cfg.Debounce)
		case <-timer.C:
			c.reload(ctx, true)
		}
	}
}

func (c *Collection) reload(ctx context.Context, force bool) {
	start := time.Now()
	rep, err := c.Load(ctx, force)
	switch {
	case err != nil && ctx.Err() != nil:
	case errors.Is(err, ErrParse):
		c.srv.log.Error("collection not reloaded: a file is not valid RDF; still serving the last good graph", "collection", c.name, "err", err)
	case err != nil:
		c.srv.log.Error("collection not reloaded; still serving the last good graph", "collection", c.name, "err", err)
	case rep.Skipped:
	case rep.Created+rep.Updated+rep.Deleted > 0:
		c.srv.log.Info("collection changed", "collection", c.name, "created", rep.Created, "updated", rep.Updated,
			"deleted", rep.Deleted, "resources", rep.Resources, "took", time.Since(start).Round(time.Millisecond))
	}
}

// addWatches watches the collection's directory tree, or the directory of
// its file (editors replace files by renaming, which a watch on the file
// itself would lose).
func (c *Collection) addWatches(w *fsnotify.Watcher) {
	fi, err := os.Stat(c.path)
	if err != nil || !fi.IsDir() {
		w.Add(filepath.Dir(c.path))
		return
	}
	filepath.WalkDir(c.path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if p != c.path && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		w.Add(p)
		return nil
	})
}
