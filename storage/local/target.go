package local

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/resourcesync-go/resourcesync/internal/nofollow"
	"github.com/resourcesync-go/resourcesync/storage"
)

func init() {
	storage.Register("file", storage.Opener{Target: func(_ context.Context, loc string, u *url.URL) (storage.Target, error) {
		dir, err := Path(loc, u)
		if err != nil {
			return nil, err
		}
		return OpenTarget(dir)
	}})
}

// Permissions of what a Target creates, less the umask (the kernel
// applies it at creation), as cp, rsync and wget do.
const (
	FilePerm = 0o666
	DirPerm  = 0o777
)

// TempPrefix starts the name of every file a Target stages: such a file
// is never listed, and no key may name one (ErrBadKey), so that a crash's
// leftovers are told apart from objects and removed (CleanTemp in
// destination/fetch uses the same prefix).
const TempPrefix = ".rs-tmp-"

// Target is a mirror in a local directory, the storage.Target of the
// "file" scheme. It is only ever accessed through a handle on the
// directory (os.Root): no key, however its components are swapped
// meanwhile, reaches outside it; and no symbolic link inside it is
// followed, even one pointing inside (CheckNoLink on every component;
// a write then goes through a handle on the parent directory). An object
// is staged in a temporary file in its key's directory and renamed into
// place by Commit: a reader never sees a partial file, and a kill -9
// leaves at most a temporary file (never listed). A Target is safe for
// concurrent use.
type Target struct {
	root *os.Root
	path string
}

// OpenTarget opens the directory dir as a Target, creating it (and its
// parents) when missing.
func OpenTarget(dir string) (*Target, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	if err := os.MkdirAll(abs, DirPerm); err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	return &Target{root: r, path: abs}, nil
}

// Path returns the directory's absolute path.
func (t *Target) Path() string { return t.path }

// Location returns the directory's absolute path.
func (t *Target) Location() string { return t.path }

// Close releases the handle on the directory.
func (t *Target) Close() error { return t.root.Close() }

// rel checks key and returns it as a path relative to the root.
func (t *Target) rel(key string) (string, error) {
	if !storage.ValidKey(key) || strings.HasPrefix(path.Base(key), TempPrefix) {
		return "", fmt.Errorf("local: %w: %q", storage.ErrBadKey, key)
	}
	if _, err := nofollow.SplitRel(key); err != nil { // a separator inside a component (Windows)
		return "", fmt.Errorf("local: %w: %q", storage.ErrBadKey, key)
	}
	return key, nil
}

// CheckNoLink returns the first component of rel (slash-separated,
// relative to root) that is a symbolic link, or "" when there is none;
// the last component is looked at only when final is set. It stops at the
// first component that does not exist (what is created below it is
// created by the caller) or that is not a directory (the operation then
// reports it). destination/fetch.Dir applies the same rule through it.
func CheckNoLink(root *os.Root, rel string, final bool) (link string, err error) {
	for i := 0; ; {
		end, last := len(rel), true
		if j := strings.IndexByte(rel[i:], '/'); j >= 0 {
			end, last = i+j, false
		}
		if last && !final {
			return "", nil
		}
		fi, err := root.Lstat(rel[:end])
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return rel[:end], nil
		}
		if last {
			return "", nil
		}
		i = end + 1
	}
}

// check refuses a symbolic link among the components of rel.
func (t *Target) check(rel, op string, final bool) error {
	link, err := CheckNoLink(t.root, rel, final)
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	if link != "" {
		return fmt.Errorf("local: %w: %s is a symbolic link; refusing to %s through it", storage.ErrRefused, filepath.Join(t.path, filepath.FromSlash(link)), op)
	}
	return nil
}

// notExist makes the "no such file" errors of a lookup storage.ErrNotExist.
func notExist(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("local: %w: %q", storage.ErrNotExist, key)
	}
	return fmt.Errorf("local: %w", err)
}

const createTries = 100

// Create stages a new object under key: a temporary file, FilePerm less
// the umask, in the key's directory (created as needed, DirPerm less the
// umask).
func (t *Target) Create(ctx context.Context, key string, opt storage.PutOptions) (storage.Writer, error) {
	rel, err := t.rel(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := t.check(rel, "write", true); err != nil {
		return nil, err
	}
	dirRel, base := path.Split(rel)
	dirRel = strings.TrimSuffix(dirRel, "/")
	w := &fileWriter{t: t, key: key, base: base, opt: opt}
	// Work in a handle on the parent directory: whatever happens to the
	// key's components from now on, the file lands in that directory. An
	// empty directory removed meanwhile (Remove of its last object) is
	// made again, a bounded number of times.
	for range createTries {
		w.parent = t.root
		if dirRel != "" {
			w.parent, err = t.root.OpenRoot(dirRel)
			if errors.Is(err, fs.ErrNotExist) {
				if err = t.root.MkdirAll(dirRel, DirPerm); err == nil {
					if err = t.check(rel, "write", true); err != nil {
						return nil, err
					}
					w.parent, err = t.root.OpenRoot(dirRel)
				}
			}
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("local: %w", err)
			}
			if err := t.sameDir(w.parent, dirRel); err != nil {
				w.closeParent()
				return nil, err
			}
		}
		w.f, w.tmp, err = createTemp(w.parent)
		if err == nil {
			break
		}
		w.closeParent()
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("local: %w", err)
		}
	}
	if w.f == nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	if opt.MD5 != nil {
		w.md5 = md5.New()
	}
	if opt.SHA256 != nil {
		w.sha = sha256.New()
	}
	return w, nil
}

// sameDir checks that dir, a handle just opened on dirRel, is the
// directory at dirRel reached through no symbolic link: os.Root follows
// a link that stays inside the root, so a directory swapped for one
// between the check and the open would have been followed.
func (t *Target) sameDir(dir *os.Root, dirRel string) error {
	if err := t.check(dirRel, "write", true); err != nil {
		return err
	}
	hfi, err := dir.Stat(".")
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	lfi, err := t.root.Lstat(dirRel)
	if err != nil || !os.SameFile(hfi, lfi) {
		return fmt.Errorf("local: %w: %s changed while it was opened; refusing to write through it", storage.ErrRefused, filepath.Join(t.path, filepath.FromSlash(dirRel)))
	}
	return nil
}

// createTemp creates a new temporary file in dir, FilePerm less the umask
// (os.CreateTemp would make it 0600, and the rename would keep that).
func createTemp(dir *os.Root) (*os.File, string, error) {
	for range 10000 {
		name := TempPrefix + strconv.FormatUint(rand.Uint64(), 36)
		f, err := dir.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, FilePerm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, name, err
	}
	return nil, "", &os.PathError{Op: "createtemp", Path: TempPrefix + "*", Err: fs.ErrExist}
}

// fileWriter is an object staged in a temporary file.
type fileWriter struct {
	t         *Target
	key, base string
	opt       storage.PutOptions
	parent    *os.Root
	f         *os.File
	tmp       string
	md5, sha  hash.Hash
	n         int64
	done      bool
}

func (w *fileWriter) closeParent() {
	if w.parent != nil && w.parent != w.t.root {
		w.parent.Close()
	}
	w.parent = nil
}

func (w *fileWriter) Write(b []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("local: write to %q after Commit or Abort", w.key)
	}
	n, err := w.f.Write(b)
	if w.md5 != nil {
		w.md5.Write(b[:n])
	}
	if w.sha != nil {
		w.sha.Write(b[:n])
	}
	w.n += int64(n)
	return n, err
}

func (w *fileWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.f.Close()
	err := w.parent.Remove(w.tmp)
	w.closeParent()
	return err
}

// Commit makes the staged file the object: size and digests checked,
// fsynced (unless NoSync where a Syncer can make it durable later), its
// mtime set, then renamed into place (with NoReplace, a rename that
// refuses an existing name: renameat2 RENAME_NOREPLACE on Linux, a hard
// link elsewhere) and the directory fsynced. IfVersion is checked just
// before the rename: a local file system has no conditional rename, so a
// writer racing in between is not seen; the Target is the only writer of
// a mirror it owns.
func (w *fileWriter) Commit(ctx context.Context) (storage.Info, error) {
	if w.done {
		return storage.Info{}, fmt.Errorf("local: Commit of %q after Commit or Abort", w.key)
	}
	ok := false
	defer func() {
		if !ok {
			w.Abort()
		}
	}()
	if err := ctx.Err(); err != nil {
		return storage.Info{}, err
	}
	if err := w.verify(); err != nil {
		return storage.Info{}, err
	}
	if !w.opt.NoSync || !haveSyncfs {
		if err := w.f.Sync(); err != nil {
			return storage.Info{}, fmt.Errorf("local: %w", err)
		}
	}
	if err := w.f.Close(); err != nil {
		return storage.Info{}, fmt.Errorf("local: %w", err)
	}
	if !w.opt.ModTime.IsZero() {
		if err := w.parent.Chtimes(w.tmp, w.opt.ModTime, w.opt.ModTime); err != nil {
			return storage.Info{}, fmt.Errorf("local: %w", err)
		}
	}
	if v := w.opt.IfVersion; v != "" {
		fi, err := w.parent.Lstat(w.base)
		if err != nil || !fi.Mode().IsRegular() || version(fi) != v {
			return storage.Info{}, fmt.Errorf("local: %w: %q is not version %s", storage.ErrExists, w.key, v)
		}
	}
	var err error
	if w.opt.NoReplace {
		err = renameNoReplace(w.parent, w.tmp, w.base)
		if errors.Is(err, fs.ErrExist) {
			return storage.Info{}, fmt.Errorf("local: %w: %q", storage.ErrExists, w.key)
		}
	} else {
		err = w.parent.Rename(w.tmp, w.base)
	}
	if err != nil {
		return storage.Info{}, fmt.Errorf("local: %w", err)
	}
	w.done, ok = true, true
	defer w.closeParent()
	if !w.opt.NoSync || !haveSyncfs {
		if err := syncDir(w.parent); err != nil {
			return storage.Info{}, fmt.Errorf("local: %w", err)
		}
	}
	fi, err := w.parent.Lstat(w.base)
	if err != nil {
		return storage.Info{}, fmt.Errorf("local: %w", err)
	}
	return info(w.key, fi), nil
}

func (w *fileWriter) verify() error {
	if w.opt.Size >= 0 && w.n != w.opt.Size {
		return fmt.Errorf("local: %w: %q: %d bytes written, %d announced", storage.ErrIntegrity, w.key, w.n, w.opt.Size)
	}
	if w.md5 != nil {
		if got := w.md5.Sum(nil); string(got) != string(w.opt.MD5) {
			return fmt.Errorf("local: %w: %q: md5 %x, announced %x", storage.ErrIntegrity, w.key, got, w.opt.MD5)
		}
	}
	if w.sha != nil {
		if got := w.sha.Sum(nil); string(got) != string(w.opt.SHA256) {
			return fmt.Errorf("local: %w: %q: sha-256 %x, announced %x", storage.ErrIntegrity, w.key, got, w.opt.SHA256)
		}
	}
	return nil
}

// noReplaceByLink renames old to new in dir only where nothing is at new,
// without a window between a check and the rename: a hard link refuses an
// existing name, then the old name is removed. A file system without hard
// links falls back to a check and a rename.
func noReplaceByLink(dir *os.Root, old, new string) error {
	err := dir.Link(old, new)
	if err == nil {
		dir.Remove(old)
		return nil
	}
	if errors.Is(err, fs.ErrExist) {
		return err
	}
	if _, err := dir.Lstat(new); err == nil {
		return fs.ErrExist
	}
	return dir.Rename(old, new)
}

// Stat returns the Info of the regular file under key.
func (t *Target) Stat(ctx context.Context, key string) (storage.Info, error) {
	rel, err := t.rel(key)
	if err != nil {
		return storage.Info{}, err
	}
	if err := t.check(rel, "read", true); err != nil {
		return storage.Info{}, err
	}
	fi, err := t.root.Lstat(rel)
	if err != nil {
		return storage.Info{}, notExist(key, err)
	}
	if !fi.Mode().IsRegular() {
		return storage.Info{}, fmt.Errorf("local: %w: %q is not a regular file", storage.ErrNotExist, key)
	}
	return info(key, fi), nil
}

// Open opens the regular file under key for reading. The file opened must
// be the one checked (os.SameFile): a link swapped in meanwhile is refused.
func (t *Target) Open(ctx context.Context, key string) (io.ReadCloser, storage.Info, error) {
	rel, err := t.rel(key)
	if err != nil {
		return nil, storage.Info{}, err
	}
	if err := t.check(rel, "read", true); err != nil {
		return nil, storage.Info{}, err
	}
	lfi, err := t.root.Lstat(rel)
	if err != nil {
		return nil, storage.Info{}, notExist(key, err)
	}
	if !lfi.Mode().IsRegular() {
		return nil, storage.Info{}, fmt.Errorf("local: %w: %q is not a regular file", storage.ErrNotExist, key)
	}
	f, err := t.root.Open(rel)
	if err != nil {
		return nil, storage.Info{}, notExist(key, err)
	}
	fi, err := f.Stat()
	if err != nil || !os.SameFile(fi, lfi) {
		f.Close()
		if err == nil {
			err = fmt.Errorf("%w: %q changed while it was opened", storage.ErrRefused, key)
		}
		return nil, storage.Info{}, fmt.Errorf("local: %w", err)
	}
	return f, info(key, fi), nil
}

// Remove removes the file under key (only if it has ifVersion, when
// given) and then the directories it leaves empty, deepest first: a
// bucket has no directories, and a mirror should not keep empty ones.
func (t *Target) Remove(ctx context.Context, key, ifVersion string) error {
	rel, err := t.rel(key)
	if err != nil {
		return err
	}
	if err := t.check(rel, "delete", true); err != nil {
		return err
	}
	if ifVersion != "" {
		fi, err := t.root.Lstat(rel)
		if err != nil {
			if errors.Is(notExist(key, err), storage.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("local: %w", err)
		}
		if version(fi) != ifVersion {
			return fmt.Errorf("local: %w: %q is not version %s", storage.ErrExists, key, ifVersion)
		}
	}
	if err := t.root.Remove(rel); err != nil && !errors.Is(notExist(key, err), storage.ErrNotExist) {
		return fmt.Errorf("local: %w", err)
	}
	t.removeEmptyDirs(rel)
	return nil
}

// RemoveEmptyDirs removes the directories above key that are empty,
// deepest first, up to the first that is not (or is a symbolic link):
// what a Remove killed after the file and before its directories left.
func (t *Target) RemoveEmptyDirs(key string) {
	if rel, err := t.rel(key); err == nil {
		t.removeEmptyDirs(rel)
	}
}

func (t *Target) removeEmptyDirs(rel string) {
	for p := path.Dir(rel); p != "."; p = path.Dir(p) {
		if link, err := CheckNoLink(t.root, p, true); err != nil || link != "" {
			return
		}
		// One already gone (a run killed while it removed them) does not
		// keep its emptied parents; one not empty ends the walk.
		if err := t.root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return
		}
	}
}

// List calls fn for every regular file below the root whose key is >
// after, in byte order of the keys. Symbolic links, other special files
// and staged (temporary) files are not listed, and no link is followed.
// A directory is read whole, one at a time: memory grows with the
// largest directory and the depth, not with the collection.
func (t *Target) List(ctx context.Context, after string, fn func(storage.Info) error) error {
	return t.list(ctx, "", after, fn)
}

func (t *Target) list(ctx context.Context, dir, after string, fn func(storage.Info) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name := dir
	if name == "" {
		name = "."
	} else if link, err := CheckNoLink(t.root, dir, true); err != nil || link != "" {
		return nil // swapped for a link since it was listed: not followed
	}
	f, err := t.root.Open(name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil // removed since it was listed
		}
		return fmt.Errorf("local: %w", err)
	}
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	// In byte order of the keys: a directory "a" sorts as "a/", after a
	// file "a-b" ('-' < '/').
	type ent struct {
		sortKey string
		e       fs.DirEntry
	}
	es := make([]ent, 0, len(ents))
	for _, e := range ents {
		switch {
		case e.IsDir():
			es = append(es, ent{dir + e.Name() + "/", e})
		case e.Type().IsRegular() && !strings.HasPrefix(e.Name(), TempPrefix):
			es = append(es, ent{dir + e.Name(), e})
		}
	}
	ents = nil
	slices.SortFunc(es, func(a, b ent) int { return strings.Compare(a.sortKey, b.sortKey) })
	for _, x := range es {
		if x.e.IsDir() {
			// Every key below starts with the prefix: skip the subtree
			// when after is past all of it.
			if after != "" && after > x.sortKey && !strings.HasPrefix(after, x.sortKey) {
				continue
			}
			if err := t.list(ctx, x.sortKey, after, fn); err != nil {
				return err
			}
			continue
		}
		if x.sortKey <= after {
			continue
		}
		fi, err := x.e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue // removed or replaced since it was listed
		}
		if err := fn(info(x.sortKey, fi)); err != nil {
			return err
		}
	}
	return nil
}

// Sync makes every commit made with PutOptions.NoSync durable: one syncfs
// of the directory's file system on Linux; elsewhere NoSync is not
// honoured (every commit is fsynced) and Sync has nothing to do.
func (t *Target) Sync(ctx context.Context) error {
	if !haveSyncfs {
		return nil
	}
	d, err := t.root.Open(".")
	if err != nil {
		return fmt.Errorf("local: %w", err)
	}
	defer d.Close()
	if err := syncfs(d); err != nil {
		return fmt.Errorf("local: syncfs %s: %w", t.path, err)
	}
	return nil
}

// CleanTemp removes the staged files a killed writer left under root (the
// files named TempPrefix…) and returns how many it removed. Symbolic
// links are not followed: the walk and the removals go through a handle
// on root, so a directory swapped for a link meanwhile cannot lead a
// removal outside it.
func CleanTemp(root string) (int, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	return cleanTemp(r)
}

// CleanTemp removes the staged files a killed writer left in the Target,
// as the function CleanTemp. A staged file of a Writer still open is
// removed too: call it before writing.
func (t *Target) CleanTemp() (int, error) { return cleanTemp(t.root) }

func cleanTemp(r *os.Root) (int, error) {
	n := 0
	err := fs.WalkDir(r.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if !d.IsDir() && strings.HasPrefix(d.Name(), TempPrefix) {
			if r.Remove(p) == nil {
				n++
			}
		}
		return nil
	})
	return n, err
}

var (
	_ storage.Target = (*Target)(nil)
	_ storage.Syncer = (*Target)(nil)
)
