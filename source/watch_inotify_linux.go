package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// newWatchBackend watches with inotify itself: fsnotify does not export
// IN_CLOSE_WRITE, and that event is what tells a file written in place
// is complete (Run scans it at once rather than after a quiet period).
// Where inotify cannot be set up, fsnotify is tried (it would fail the
// same way, with its own error).
func newWatchBackend() (watchBackend, error) {
	b, err := newInotifyBackend()
	if err != nil {
		return newFsnotifyBackend()
	}
	return b, nil
}

// inotifyMask is what each directory's watch reports.
const inotifyMask = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_DELETE_SELF |
	unix.IN_MOVE_SELF | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_ATTRIB

// inotifyBackend reads an inotify descriptor through Go's poller (the
// descriptor is non-blocking, so os.File parks the reader in epoll and
// Close wakes it).
type inotifyBackend struct {
	f    *os.File
	evs  chan watchEvent
	errs chan error
	done chan struct{}
	once sync.Once

	mu   sync.Mutex
	dirs map[int32]string // watch descriptor → directory
}

func newInotifyBackend() (*inotifyBackend, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("source: watch: inotify_init1: %w", err)
	}
	// A buffer lets Run take what has queued in one go (its coalescing);
	// the kernel's queue (fs.inotify.max_queued_events) is the rest.
	b := &inotifyBackend{f: os.NewFile(uintptr(fd), "inotify"), evs: make(chan watchEvent, 4096), errs: make(chan error, 1),
		done: make(chan struct{}), dirs: map[int32]string{}}
	go b.loop()
	return b, nil
}

func (b *inotifyBackend) add(dir string) error {
	sc, err := b.f.SyscallConn()
	if err != nil {
		return fmt.Errorf("source: watch %s: %w", dir, err)
	}
	var wd int
	var aerr error
	if err := sc.Control(func(fd uintptr) { wd, aerr = unix.InotifyAddWatch(int(fd), dir, inotifyMask) }); err != nil {
		return fmt.Errorf("source: watch %s: %w", dir, err)
	}
	if aerr != nil {
		return fmt.Errorf("source: watch %s: %w", dir, aerr)
	}
	b.mu.Lock()
	b.dirs[int32(wd)] = dir // the same directory moved: its new name
	b.mu.Unlock()
	return nil
}

func (b *inotifyBackend) loop() {
	defer close(b.evs)
	buf := make([]byte, 64<<10)
	for {
		n, err := b.f.Read(buf)
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				return
			}
			if errors.Is(err, unix.EINTR) {
				continue
			}
			b.send(watchEvent{}, fmt.Errorf("source: watch: read: %w", err))
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			raw := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			end := off + unix.SizeofInotifyEvent + int(raw.Len)
			if end > n {
				break // the kernel never splits an event
			}
			name := string(buf[off+unix.SizeofInotifyEvent : end])
			for len(name) > 0 && name[len(name)-1] == 0 {
				name = name[:len(name)-1]
			}
			off = end
			if !b.event(raw.Wd, raw.Mask, name) {
				return
			}
		}
	}
}

// event translates one inotify event; false once closed.
func (b *inotifyBackend) event(wd int32, mask uint32, name string) bool {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		return b.send(watchEvent{}, errWatchOverflow)
	}
	b.mu.Lock()
	dir, ok := b.dirs[wd]
	if mask&unix.IN_IGNORED != 0 {
		delete(b.dirs, wd)
	}
	b.mu.Unlock()
	if !ok || mask&unix.IN_IGNORED != 0 {
		return true
	}
	p := dir
	if name != "" {
		p = filepath.Join(dir, name)
	}
	var op watchOp
	if mask&unix.IN_ISDIR != 0 {
		op |= opDir
	}
	if mask&unix.IN_CREATE != 0 {
		op |= opCreate
	}
	if mask&unix.IN_MOVED_TO != 0 {
		op |= opCreate | opMoved
	}
	if mask&(unix.IN_DELETE|unix.IN_DELETE_SELF) != 0 {
		op |= opRemove
	}
	if mask&(unix.IN_MOVED_FROM|unix.IN_MOVE_SELF) != 0 {
		op |= opRename
	}
	if mask&unix.IN_MODIFY != 0 {
		op |= opWrite
	}
	if mask&unix.IN_CLOSE_WRITE != 0 {
		op |= opClosed
	}
	if mask&unix.IN_ATTRIB != 0 {
		op |= opChmod
	}
	return b.send(watchEvent{name: p, op: op}, nil)
}

func (b *inotifyBackend) send(ev watchEvent, err error) bool {
	if err != nil {
		select {
		case b.errs <- err:
			return true
		case <-b.done:
			return false
		}
	}
	select {
	case b.evs <- ev:
		return true
	case <-b.done:
		return false
	}
}

func (b *inotifyBackend) events() <-chan watchEvent { return b.evs }
func (b *inotifyBackend) errors() <-chan error      { return b.errs }
func (b *inotifyBackend) closeWrite() bool          { return true }
func (b *inotifyBackend) close() error {
	var err error
	b.once.Do(func() {
		close(b.done)
		err = b.f.Close()
	})
	return err
}

// linkCount is the file's number of hard links.
func linkCount(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
