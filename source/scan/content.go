package scan

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/storage"
)

// A Scanner with Options.Content lists the Content instead of walking
// Root. The listing comes in key order, which is the inventory's order,
// and is merged with the inventory pages exactly as the walk is: a known
// object whose size and Version equal its record's is not read (the
// record's Inode holds VersionHash of the Version), a new or changed one
// is opened once and hashed, a record the listing passes is deleted.

// contentWorkers is the default number of hashing workers on a Content:
// reading an object is mostly waiting on the network, not the CPU.
const contentWorkers = 16

// VersionHash is what the inventory keeps of a Content object's Version,
// in store.Resource.Inode (see source/store's documentation): a 64-bit
// FNV-1a hash, never 0. 0 means "read it again next time".
func VersionHash(v string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(v))
	if x := h.Sum64(); x != 0 {
		return x
	}
	return 1
}

// publishable reports whether the walk would publish key: no component
// hidden ("."), skipped (Options.Skip, on the component's path or name)
// or too long.
func (s *Scanner) publishable(key string) bool {
	for i := 0; ; {
		j := strings.IndexByte(key[i:], '/')
		end := len(key)
		if j >= 0 {
			end = i + j
		}
		name := key[i:end]
		if strings.HasPrefix(name, ".") || s.skipped(key[:end], name) {
			return false
		}
		if j < 0 {
			return true
		}
		i = end + 1
	}
}

// content merges the whole listing with the whole inventory.
func (m *merge) content() error {
	s := m.s
	c := m.open("", "")
	defer c.close()
	err := s.opt.Content.List(m.ctx, "", func(inf storage.Info) error {
		if m.n++; m.n&1023 == 0 {
			if err := m.ctx.Err(); err != nil {
				return err
			}
		}
		if !storage.ValidKey(inf.Key) {
			// A Content lists valid keys only; one that does not (an S3
			// "directory marker" ending in "/", "a//b", "..") is never
			// published: it names no file a mirror could write.
			m.st.Skipped++
			s.log.Debug("scan: invalid key not published", "key", inf.Key)
			return nil
		}
		if !s.publishable(inf.Key) {
			return nil
		}
		if s.tooLong(inf.Key) {
			m.st.Skipped++
			return nil
		}
		j := job{rel: inf.Key, ver: inf.Version, st: statKey{size: inf.Size, mtime: inf.ModTime}, known: true}
		known, err := m.upTo(c, inf.Key)
		if err != nil {
			return err
		}
		if known {
			j.prev, j.old = c.rec, true
			c.load()
		}
		return m.queue(j)
	})
	if err != nil {
		if m.ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			err = fmt.Errorf("scan %s: %w", s.opt.Content.Location(), err)
		}
		return err
	}
	return m.rest(c)
}

// visitContent is visit for a listed object: the listing gave its size
// and Version, no stat is needed.
func (s *Scanner) visitContent(ctx context.Context, j job, ws *Stats, w *worker) (result, bool) {
	ws.Files++
	if j.old && j.prev.Inode != 0 && j.prev.Size == j.st.size && j.prev.Inode == VersionHash(j.ver) {
		ws.Unchanged++
		return result{}, false
	}
	return s.hash(ctx, j, w), true
}

// hashContent reads a Content object once, as hashOnce reads a file.
func (s *Scanner) hashContent(ctx context.Context, j job, w *worker) (store.Resource, error) {
	start := time.Now()
	rc, inf, err := s.opt.Content.Open(ctx, j.rel, 0, -1)
	if errors.Is(err, storage.ErrNotExist) {
		return store.Resource{}, fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	if err != nil {
		return store.Resource{}, err
	}
	defer rc.Close()
	w.md5.Reset()
	w.sha.Reset()
	var n int64
	hn := 0
	for {
		k, err := rc.Read(w.buf)
		if k > 0 {
			if hn < len(w.head) {
				hn += copy(w.head[hn:], w.buf[:k])
			}
			w.md5.Write(w.buf[:k])
			w.sha.Write(w.buf[:k])
			n += int64(k)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return store.Resource{}, fmt.Errorf("read %s: %w", j.rel, err)
		}
	}
	if n != inf.Size {
		return store.Resource{}, errChanged
	}
	r := store.Resource{
		Path:    j.rel,
		Size:    n,
		ModTime: inf.ModTime,
		Inode:   VersionHash(inf.Version),
		LastMod: inf.ModTime,
	}
	w.md5.Sum(r.MD5[:0])
	w.sha.Sum(r.SHA256[:0])
	r.Type = inf.ContentType
	if t, _, _ := strings.Cut(r.Type, ";"); t == "" || t == "application/octet-stream" || t == "binary/octet-stream" {
		// No type, or the generic one S3 clients send by default.
		r.Type = mime.TypeByExtension(path.Ext(j.rel))
		if r.Type == "" {
			r.Type = http.DetectContentType(w.head[:hn])
		}
	}
	_, racy := s.opt.Content.(storage.MtimeVersioned)
	if inf.Version == "" || racy && !inf.ModTime.Before(start.Add(-RacyWindow)) {
		// No version to trust, or a racily clean one (a local file
		// written again within its mtime tick keeps its Version): read
		// it again next time. A Version made from the bytes (an ETag)
		// is trusted whatever the mtime a writer gave.
		r.Inode = 0
	}
	return r, nil
}

// guardContent is guardRoot for a Content: a listing that fails is
// returned (nothing changes), and one without any publishable key, while
// the inventory holds n resources, is refused with RefuseEmptyRoot. It
// reads the listing up to the first publishable key: on a bucket, a page.
func (s *Scanner) guardContent(ctx context.Context, n int) error {
	if !s.opt.RefuseEmptyRoot {
		return nil
	}
	found := errors.New("found")
	err := s.opt.Content.List(ctx, "", func(inf storage.Info) error {
		if storage.ValidKey(inf.Key) && s.publishable(inf.Key) {
			return found
		}
		return nil
	})
	switch {
	case errors.Is(err, found):
		return nil
	case err != nil:
		return fmt.Errorf("scan %s: %w", s.opt.Content.Location(), err)
	}
	return fmt.Errorf("%w: %s holds no object while the inventory holds %d resources: emptied, or a wrong bucket or prefix? Refusing to journal the deletion of every resource", ErrEmptyRoot, s.opt.Content.Location(), n)
}
