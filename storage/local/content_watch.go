package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/fsnotify/fsnotify"

	"github.com/resourcesync-go/resourcesync/storage"
)

// Watch implements storage.Watcher with fsnotify, as serve --watch does
// on a directory: every directory under the root is watched (not through
// links), a directory created later is added as it appears and reported
// as a prefix ("d/": files may have been written in it before its watch
// was in place), a removed or renamed path is reported both as a key and
// as a prefix (it may have been a directory), and a lost queue of events
// (overflow) is reported as "", everything. Events that arrive together
// are reported in one call. Hidden paths are reported too: the reader
// decides what it publishes.
func (c *Content) Watch(ctx context.Context, fn func(keys []string)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("local: watch: %w", err)
	}
	defer w.Close()
	if err := c.watchTree(w, c.root); err != nil {
		return err
	}
	var keys []string
	add := func(ev fsnotify.Event) {
		rel, err := filepath.Rel(c.root, ev.Name)
		if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			return
		}
		key := filepath.ToSlash(rel)
		switch {
		case ev.Has(fsnotify.Create):
			if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
				c.watchTree(w, ev.Name)
				keys = append(keys, key+"/")
				return
			}
		case ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename):
			keys = append(keys, key+"/")
		}
		keys = append(keys, key)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			add(ev)
		drain:
			for {
				select {
				case ev, ok := <-w.Events:
					if !ok {
						break drain
					}
					add(ev)
				default:
					break drain
				}
			}
			if len(keys) > 0 {
				fn(keys)
				keys = nil
			}
		case err, ok := <-w.Errors:
			if !ok {
				return nil
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				fn([]string{""})
				continue
			}
			return fmt.Errorf("local: watch: %w", err)
		}
	}
}

// watchTree adds a watch on dir and every directory under it, not
// following links (WalkDir does not).
func (c *Content) watchTree(w *fsnotify.Watcher, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir && dir == c.root {
				return fmt.Errorf("local: watch: %w", err)
			}
			return nil // gone meanwhile, or unreadable: its parent's events still come
		}
		if !d.IsDir() {
			return nil
		}
		if err := w.Add(p); err != nil && p == c.root {
			return fmt.Errorf("local: watch: %w", err)
		}
		return nil
	})
}

var _ storage.Watcher = (*Content)(nil)
