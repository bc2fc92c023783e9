package source

import (
	"errors"
	"fmt"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// watchOp is what a filesystem event says about the path it names. The
// portable ops are fsnotify's; opClosed and opMoved come only from a
// backend that can tell them (Linux's inotify: IN_CLOSE_WRITE and
// IN_MOVED_TO), and they are what lets Run scan a change at once instead
// of waiting for a quiet period: the file is complete.
type watchOp uint16

const (
	opCreate watchOp = 1 << iota // a name appeared (created, moved in, linked)
	opWrite                      // contents written: the file may still be open for writing
	opRemove                     // the name is gone
	opRename                     // the name was moved away
	opChmod                      // metadata changed
	opClosed                     // a writer closed it: its contents are complete
	opMoved                      // moved in whole (with opCreate)
	opDir                        // the name is a directory
)

// watchEvent is one event of a watchBackend.
type watchEvent struct {
	name string
	op   watchOp
}

// errWatchOverflow: events were lost; a full scan catches up.
var errWatchOverflow = errors.New("filesystem watch: event queue overflowed")

// watchBackend is the platform's directory watch: Linux uses inotify
// directly (watch_inotify_linux.go), which reports IN_CLOSE_WRITE, an
// op fsnotify does not export; other platforms use fsnotify.
type watchBackend interface {
	add(dir string) error
	events() <-chan watchEvent
	errors() <-chan error
	close() error
	// closeWrite reports whether opClosed and opMoved are reported: if
	// not, a created or written file may be incomplete until events are
	// quiet, and Run waits for that.
	closeWrite() bool
}

// fsnotifyBackend adapts fsnotify (every platform but Linux).
type fsnotifyBackend struct {
	w    *fsnotify.Watcher
	evs  chan watchEvent
	errs chan error
	done chan struct{}
	once sync.Once
}

func newFsnotifyBackend() (*fsnotifyBackend, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("source: watch: %w", err)
	}
	b := &fsnotifyBackend{w: w, evs: make(chan watchEvent), errs: make(chan error), done: make(chan struct{})}
	go b.loop()
	return b, nil
}

func (b *fsnotifyBackend) loop() {
	defer close(b.evs)
	for {
		select {
		case ev, ok := <-b.w.Events:
			if !ok {
				return
			}
			var op watchOp
			for _, m := range []struct {
				f fsnotify.Op
				o watchOp
			}{{fsnotify.Create, opCreate}, {fsnotify.Write, opWrite}, {fsnotify.Remove, opRemove}, {fsnotify.Rename, opRename}, {fsnotify.Chmod, opChmod}} {
				if ev.Has(m.f) {
					op |= m.o
				}
			}
			select {
			case b.evs <- watchEvent{name: ev.Name, op: op}:
			case <-b.done:
				return
			}
		case err, ok := <-b.w.Errors:
			if !ok {
				return
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				err = fmt.Errorf("%w: %w", errWatchOverflow, err)
			}
			select {
			case b.errs <- err:
			case <-b.done:
				return
			}
		}
	}
}

func (b *fsnotifyBackend) add(dir string) error      { return b.w.Add(dir) }
func (b *fsnotifyBackend) events() <-chan watchEvent { return b.evs }
func (b *fsnotifyBackend) errors() <-chan error      { return b.errs }
func (b *fsnotifyBackend) closeWrite() bool          { return false }
func (b *fsnotifyBackend) close() error {
	var err error
	b.once.Do(func() {
		close(b.done)
		err = b.w.Close()
	})
	return err
}
