package mem

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/storage"
)

func init() {
	storage.Register("mem", storage.Opener{Target: func(_ context.Context, loc string, u *url.URL) (storage.Target, error) {
		s, prefix, err := parse(loc, u)
		if err != nil {
			return nil, err
		}
		return s.Target(prefix), nil
	}})
}

// Target returns the Store's objects under prefix ("" for all, else a
// valid key followed by "/") as a storage.Target whose keys leave the
// prefix out. A staged object is held by its Writer alone: nothing of it
// is in the Store until Commit, which checks the conditions and puts it
// under the lock, so a commit is atomic as an S3 PUT is.
func (s *Store) Target(prefix string) storage.Target {
	return &target{s: s, prefix: prefix}
}

type target struct {
	s      *Store
	prefix string
}

func (t *target) Location() string {
	if t.prefix == "" {
		return t.s.Location()
	}
	return t.s.Location() + "/" + strings.TrimSuffix(t.prefix, "/")
}

func (t *target) Close() error { return nil }

func (t *target) key(key string) (string, error) {
	if !storage.ValidKey(key) {
		return "", fmt.Errorf("mem: %w: %q", storage.ErrBadKey, key)
	}
	return t.prefix + key, nil
}

func (t *target) Create(ctx context.Context, key string, opt storage.PutOptions) (storage.Writer, error) {
	k, err := t.key(key)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return &writer{t: t, key: key, full: k, opt: opt}, nil
}

// writer stages an object in its own buffer.
type writer struct {
	t         *target
	key, full string
	opt       storage.PutOptions
	buf       bytes.Buffer
	done      bool
}

func (w *writer) Write(b []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("mem: write to %q after Commit or Abort", w.key)
	}
	return w.buf.Write(b)
}

func (w *writer) Abort() error {
	w.done = true
	w.buf = bytes.Buffer{}
	return nil
}

func (w *writer) Commit(ctx context.Context) (storage.Info, error) {
	if w.done {
		return storage.Info{}, fmt.Errorf("mem: Commit of %q after Commit or Abort", w.key)
	}
	w.done = true
	data := w.buf.Bytes()
	w.buf = bytes.Buffer{}
	if err := ctx.Err(); err != nil {
		return storage.Info{}, err
	}
	sum := md5.Sum(data)
	if err := checkIntegrity(w.key, w.opt, int64(len(data)), sum[:], func() []byte { s := sha256.Sum256(data); return s[:] }); err != nil {
		return storage.Info{}, err
	}
	mt := w.opt.ModTime
	if mt.IsZero() {
		mt = time.Now()
	}
	ob := &object{data: data, modTime: mt.Round(0), version: hex.EncodeToString(sum[:]), contentType: w.opt.ContentType}
	s := w.t.s
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, exists := s.objs[w.full]
	switch {
	case w.opt.NoReplace && exists:
		return storage.Info{}, fmt.Errorf("mem: %w: %q", storage.ErrExists, w.key)
	case w.opt.IfVersion != "" && (!exists || cur.version != w.opt.IfVersion):
		return storage.Info{}, fmt.Errorf("mem: %w: %q is not version %s", storage.ErrExists, w.key, w.opt.IfVersion)
	}
	s.put(w.full, ob)
	return ob.info(w.key), nil
}

// checkIntegrity compares what was written with the size and digests
// the caller announced (sha is computed only when a SHA256 was given).
func checkIntegrity(key string, opt storage.PutOptions, n int64, md5sum []byte, sha func() []byte) error {
	if opt.Size >= 0 && n != opt.Size {
		return fmt.Errorf("mem: %w: %q: %d bytes written, %d announced", storage.ErrIntegrity, key, n, opt.Size)
	}
	if opt.MD5 != nil && !bytes.Equal(opt.MD5, md5sum) {
		return fmt.Errorf("mem: %w: %q: md5 %x, announced %x", storage.ErrIntegrity, key, md5sum, opt.MD5)
	}
	if opt.SHA256 != nil {
		if got := sha(); !bytes.Equal(opt.SHA256, got) {
			return fmt.Errorf("mem: %w: %q: sha-256 %x, announced %x", storage.ErrIntegrity, key, got, opt.SHA256)
		}
	}
	return nil
}

func (t *target) get(key string) (*object, error) {
	k, err := t.key(key)
	if err != nil {
		return nil, err
	}
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	ob, ok := t.s.objs[k]
	if !ok {
		return nil, fmt.Errorf("mem: %w: %q", storage.ErrNotExist, key)
	}
	return ob, nil
}

func (t *target) Stat(ctx context.Context, key string) (storage.Info, error) {
	ob, err := t.get(key)
	if err != nil {
		return storage.Info{}, err
	}
	return ob.info(key), nil
}

func (t *target) Open(ctx context.Context, key string) (io.ReadCloser, storage.Info, error) {
	ob, err := t.get(key)
	if err != nil {
		return nil, storage.Info{}, err
	}
	// An object's bytes never change once stored: the reader needs no lock.
	return io.NopCloser(bytes.NewReader(ob.data)), ob.info(key), nil
}

func (t *target) Remove(ctx context.Context, key, ifVersion string) error {
	k, err := t.key(key)
	if err != nil {
		return err
	}
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	ob, ok := t.s.objs[k]
	if !ok {
		return nil
	}
	if ifVersion != "" && ob.version != ifVersion {
		return fmt.Errorf("mem: %w: %q is not version %s", storage.ErrExists, key, ifVersion)
	}
	t.s.del(k)
	return nil
}

func (t *target) List(ctx context.Context, after string, fn func(storage.Info) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		pg := t.s.page(t.prefix, after)
		if len(pg) == 0 {
			return nil
		}
		for _, in := range pg {
			if err := fn(in); err != nil {
				return err
			}
		}
		after = pg[len(pg)-1].Key
	}
}
