package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/nofollow"
	"github.com/resourcesync-go/resourcesync/storage"
)

func init() {
	storage.Register("file", storage.Opener{Content: func(_ context.Context, loc string, u *url.URL) (storage.Content, error) {
		dir, err := Path(loc, u)
		if err != nil {
			return nil, err
		}
		return NewContent(dir)
	}})
}

// Path returns the directory a "file" location names: the location
// itself when it has no scheme, PATH of "file:PATH" (storage.LocalPath),
// else the URL's path.
func Path(loc string, u *url.URL) (string, error) {
	if u == nil {
		return storage.LocalPath(loc)
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("local: %q: a file location names no host", loc)
	}
	p := u.Path
	if len(p) >= 3 && p[0] == '/' && p[2] == ':' { // file:///C:/dir
		p = p[1:]
	}
	return filepath.FromSlash(p), nil
}

// Content is a directory read as a storage.Content.
type Content struct {
	root string // absolute
}

// NewContent returns the Content of the directory dir, which must exist.
func NewContent(dir string) (*Content, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("local: %s is not a directory", abs)
	}
	return &Content{root: abs}, nil
}

// Root returns the directory, absolute.
func (c *Content) Root() string { return c.root }

// Location returns the directory.
func (c *Content) Location() string { return c.root }

// MtimeVersions marks the Content as storage.MtimeVersioned: a Version is
// "size:mtime_ns:inode".
func (c *Content) MtimeVersions() {}

var _ storage.MtimeVersioned = (*Content)(nil)

// Close does nothing: a Content holds no descriptor between calls.
func (c *Content) Close() error { return nil }

// version is the Info.Version of a file: what the local scan compares.
func version(fi fs.FileInfo) string {
	return fmt.Sprintf("%d:%d:%d", fi.Size(), fi.ModTime().UnixNano(), inode(fi))
}

func info(key string, fi fs.FileInfo) storage.Info {
	return storage.Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime(), Version: version(fi)}
}

// List walks the directory in key order (see the package documentation),
// skipping the subtrees whose keys all sort at or before after.
func (c *Content) List(ctx context.Context, after string, fn func(storage.Info) error) error {
	err := c.walk(ctx, "", after, fn)
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

var errStop = errors.New("stop")

func (c *Content) walk(ctx context.Context, rel, after string, fn func(storage.Info) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var f *os.File
	var err error
	if rel == "" {
		f, err = os.Open(c.root) // the root itself may be a link
	} else {
		f, err = nofollow.Open(c.root, rel)
	}
	if err != nil {
		if rel == "" {
			return fmt.Errorf("local: list %s: %w", c.root, err)
		}
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, nofollow.ErrLink) {
			return nil // gone or replaced since its parent was listed
		}
		return fmt.Errorf("local: list %s: %w", rel, err)
	}
	dir := filepath.Join(c.root, filepath.FromSlash(rel))
	ents, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("local: list %s: %w", dir, err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return cmpEntry(a.Name(), a.IsDir(), b.Name(), b.IsDir()) })
	prefix := ""
	if rel != "" {
		prefix = rel + "/"
	}
	for _, e := range ents {
		key := prefix + e.Name()
		switch t := e.Type(); {
		case t.IsDir():
			// Every key under it starts with key+"/": skip the subtree
			// when they all sort at or before after.
			if after != "" && key+"/" < after && !strings.HasPrefix(after, key+"/") {
				continue
			}
			if err := c.walk(ctx, key, after, fn); err != nil {
				return err
			}
		case t.IsRegular():
			if key <= after || !storage.ValidKey(key) {
				continue
			}
			fi, err := e.Info()
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return fmt.Errorf("local: %w", err)
			}
			if !fi.Mode().IsRegular() {
				continue
			}
			if err := fn(info(key, fi)); err != nil {
				return err
			}
		}
	}
	return nil
}

// cmpEntry compares two names of one directory as the keys under them
// sort: a directory's name as name+"/" (source/scan has the same rule).
func cmpEntry(a string, aDir bool, b string, bDir bool) int {
	if aDir {
		a += "/"
	}
	if bDir {
		b += "/"
	}
	return strings.Compare(a, b)
}

func (c *Content) open(key string) (*os.File, fs.FileInfo, error) {
	if !storage.ValidKey(key) {
		return nil, nil, fmt.Errorf("local: %w: %q", storage.ErrBadKey, key)
	}
	f, err := nofollow.Open(c.root, key)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, nofollow.ErrLink) || isNotDir(err) {
			return nil, nil, fmt.Errorf("local: %s: %w (%w)", key, storage.ErrNotExist, err)
		}
		return nil, nil, fmt.Errorf("local: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("local: %w", err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, fmt.Errorf("local: %s: not a regular file: %w", key, storage.ErrNotExist)
	}
	return f, fi, nil
}

// Stat returns the file's Info; a missing file, a directory, a link or a
// path through a link is ErrNotExist.
func (c *Content) Stat(ctx context.Context, key string) (storage.Info, error) {
	f, fi, err := c.open(key)
	if err != nil {
		return storage.Info{}, err
	}
	f.Close()
	return info(key, fi), nil
}

// Open reads the file from offset. A file whose size or mtime changed
// by the time the reader reaches the end makes the last Read fail, so a
// reader never takes bytes of two versions for one.
func (c *Content) Open(ctx context.Context, key string, offset, length int64) (io.ReadCloser, storage.Info, error) {
	f, fi, err := c.open(key)
	if err != nil {
		return nil, storage.Info{}, err
	}
	size := fi.Size()
	offset = min(max(offset, 0), size)
	n := size - offset
	if length >= 0 {
		n = min(n, length)
	}
	if offset > 0 {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			f.Close()
			return nil, storage.Info{}, fmt.Errorf("local: %w", err)
		}
	}
	return &reader{f: f, left: n, size: size, mtime: fi.ModTime()}, info(key, fi), nil
}

// ErrChanged is matched by the error a reader returns when its file
// changed while it was read.
var ErrChanged = errors.New("local: file changed while being read")

type reader struct {
	f     *os.File
	left  int64
	size  int64
	mtime time.Time
}

func (r *reader) Read(p []byte) (int, error) {
	if r.left <= 0 {
		return 0, r.check()
	}
	if int64(len(p)) > r.left {
		p = p[:r.left]
	}
	n, err := r.f.Read(p)
	r.left -= int64(n)
	if err == io.EOF && r.left > 0 {
		return n, fmt.Errorf("%w: %s shrank", ErrChanged, r.f.Name())
	}
	if err == nil && r.left == 0 {
		err = r.check()
	}
	return n, err
}

// check returns io.EOF if the file is still the one opened.
func (r *reader) check() error {
	fi, err := r.f.Stat()
	if err != nil {
		return err
	}
	if fi.Size() != r.size || !fi.ModTime().Equal(r.mtime) {
		return fmt.Errorf("%w: %s", ErrChanged, r.f.Name())
	}
	return io.EOF
}

func (r *reader) Close() error { return r.f.Close() }
