package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store"
	"github.com/resourcesync-go/resourcesync/storage"
)

// serveContent serves a resource of a Set whose collection is a
// storage.Content (a bucket): as a file, with the inventory's type, ETag
// and lastmod, ranges and conditional requests (http.ServeContent), but
// streamed from the Content. The object must still be the scanned one
// (same size and Version), as a file must be the scanned one: else 503.
func (h *Handler) serveContent(w http.ResponseWriter, r *http.Request, set *Set, rel string, res *store.Resource) {
	inf, err := set.Content.Stat(r.Context(), rel)
	switch {
	case errors.Is(err, storage.ErrNotExist):
		http.NotFound(w, r) // gone: the next scan records the deletion
		return
	case err != nil:
		if r.Context().Err() == nil {
			h.log().Warn("server: cannot stat the resource", "path", rel, "err", err)
			h.unavailable(w)
		}
		return
	case !sameVersion(inf, res):
		h.log().Warn("server: resource changed since the last scan; not served until rescanned", "path", rel)
		h.unavailable(w)
		return
	}
	hd := w.Header()
	if res.Type != "" {
		hd.Set("Content-Type", res.Type)
	} else {
		hd.Set("Content-Type", "application/octet-stream")
	}
	if set.CapabilityList != "" {
		hd.Set("Link", "<"+set.CapabilityList+`>; rel="resourcesync"`)
	}
	hd.Set("ETag", etag(res))
	rs := &contentReader{ctx: r.Context(), c: set.Content, key: rel, res: res, end: rangeEnd(r.Header.Get("Range"), res.Size)}
	defer rs.Close()
	http.ServeContent(w, r, "", res.LastMod, rs)
	if rs.err != nil && r.Context().Err() == nil {
		h.log().Warn("server: resource read failed part way", "path", rel, "err", rs.err)
		panic(http.ErrAbortHandler) // the client must not take a short body for a whole one
	}
}

// sameVersion reports whether inf is the object res was scanned from:
// same size and, when the inventory kept it, the same Version.
func sameVersion(inf storage.Info, res *store.Resource) bool {
	return inf.Size == res.Size && (res.Inode == 0 || scan.VersionHash(inf.Version) == res.Inode)
}

// contentReader is the io.ReadSeeker http.ServeContent reads: each Seek
// to another place opens the object again from there (a Range request
// reads from its start offset, not from 0).
type contentReader struct {
	ctx context.Context
	c   storage.Content
	key string
	res *store.Resource
	end int64 // where a single Range request ends: reads stop there
	pos int64
	rc  io.ReadCloser
	at  int64 // rc's position
	rcn int64 // where rc ends
	err error
}

// rangeEnd returns the end (exclusive) of the one range of a Range header
// ("bytes=A-B", "bytes=A-", "bytes=-N"), or size when there is none,
// several, or one net/http will refuse: the object is then opened to its
// end. Opening only the range's bytes lets a bucket's connection be
// reused after a small range of a large object.
func rangeEnd(h string, size int64) int64 {
	spec, ok := strings.CutPrefix(h, "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return size
	}
	a, b, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok || a == "" || b == "" {
		return size
	}
	end, err := strconv.ParseInt(b, 10, 64)
	if err != nil || end < 0 || end >= size {
		return size
	}
	return end + 1
}

func (cr *contentReader) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += cr.pos
	case io.SeekEnd:
		off += cr.res.Size
	}
	if off < 0 {
		return 0, errors.New("server: seek before the start")
	}
	cr.pos = off
	return off, nil
}

func (cr *contentReader) Read(b []byte) (int, error) {
	if cr.pos >= cr.res.Size {
		return 0, io.EOF
	}
	if cr.rc == nil || cr.at != cr.pos || cr.at >= cr.rcn {
		cr.Close()
		n := int64(-1)
		cr.rcn = cr.res.Size
		if cr.pos < cr.end {
			n, cr.rcn = cr.end-cr.pos, cr.end
		}
		rc, inf, err := cr.c.Open(cr.ctx, cr.key, cr.pos, n)
		if err == nil && !sameVersion(inf, cr.res) {
			rc.Close()
			err = fmt.Errorf("%s changed since the last scan", cr.key)
		}
		if err != nil {
			cr.err = err
			return 0, err
		}
		cr.rc, cr.at = rc, cr.pos
	}
	n, err := cr.rc.Read(b)
	cr.pos += int64(n)
	cr.at = cr.pos
	if err != nil && err != io.EOF {
		cr.err = err
	}
	switch {
	case err == io.EOF && cr.pos < cr.rcn:
		err = io.ErrUnexpectedEOF
		cr.err = err
	case err == io.EOF && cr.pos < cr.res.Size:
		err = nil // the range opened ends here; a read past it opens again
	}
	return n, err
}

func (cr *contentReader) Close() error {
	if cr.rc != nil {
		cr.rc.Close()
		cr.rc = nil
	}
	return nil
}
