package server

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	"github.com/resourcesync-go/resourcesync/internal/bulk"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// The bulk GET (package internal/bulk has the format and why): a POST of
// paths to BASE/.resourcesync/bulk answers each with the very bytes a
// GET of BASE/PATH would give (the same inventory lookup, the same
// refusal of links and of files changed since the scan), so that a
// mirror of many small files makes one request per batch instead of one
// per file. Anything a member cannot carry (not in the inventory, over
// bulk.MaxMember, in a bucket, changed since the scan) is answered with
// its status and no bytes: the client then GETs it and gets the whole
// answer. The endpoint is advertised by a Link header on the documents
// (bulkLink), never in them.

// bulkBufs hold one member each.
var bulkBufs = sync.Pool{New: func() any { b := make([]byte, bulk.MaxMember); return &b }}

// isBulk reports whether r is a request to the bulk endpoint.
func (h *Handler) isBulk(r *http.Request) bool {
	return !h.NoBulk && r.URL.EscapedPath() == h.mount()+bulk.Path
}

func (h *Handler) mount() string {
	if h.Mount == "" {
		return "/"
	}
	return h.Mount
}

// bulkLink adds the Link header that advertises the endpoint.
func (h *Handler) bulkLink(hd http.Header) {
	if !h.NoBulk {
		hd.Add("Link", "<"+h.mount()+bulk.Path+`>; rel="`+bulk.Rel+`"`)
	}
}

func (h *Handler) serveBulk(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed: POST the paths, one a line", http.StatusMethodNotAllowed)
		return
	}
	paths, err := bulk.ParseRequest(http.MaxBytesReader(w, r.Body, bulk.MaxRequestBytes+1))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	hd := w.Header()
	hd.Set("Content-Type", bulk.MediaType)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Content-Security-Policy", "sandbox")
	hd.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	bw := bufio.NewWriterSize(w, 64<<10)
	bp := bulkBufs.Get().(*[]byte)
	defer bulkBufs.Put(bp)
	var line []byte
	for _, p := range paths {
		if r.Context().Err() != nil {
			return // the client left: no end line, it sees a truncated stream
		}
		st, b := h.bulkMember(r.Context(), p, *bp)
		line = bulk.AppendHeader(line[:0], st, len(b), p)
		bw.Write(line)
		if _, err := bw.Write(b); err != nil {
			return
		}
	}
	bw.WriteString(bulk.End)
	bw.Flush()
}

// bulkMember answers one path (escaped, relative to the mount): 200 and
// the bytes (in buf), or a status without bytes.
func (h *Handler) bulkMember(ctx context.Context, p string, buf []byte) (int, []byte) {
	if strings.HasPrefix(p, "/") || IsDocumentPath(p) {
		return http.StatusNotFound, nil
	}
	escaped := h.mount() + p
	set := h.setOf(escaped)
	if set == nil {
		return http.StatusNotFound, nil
	}
	rel, err := unescape(escaped[len(set.Prefix):])
	if err != nil || rel == "" || strings.HasSuffix(rel, "/") || !descends(rel) {
		return http.StatusNotFound, nil
	}
	lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	res, err := set.Store.Get(lctx, rel)
	cancel()
	switch {
	case errors.Is(err, store.ErrNotFound):
		return http.StatusNotFound, nil
	case err != nil:
		return http.StatusServiceUnavailable, nil
	case set.Content != nil:
		return http.StatusNotImplemented, nil // a bucket: GET streams it
	case res.Size > bulk.MaxMember || res.Size > int64(len(buf)):
		return http.StatusRequestEntityTooLarge, nil
	}
	b, ok := readScanned(set.Dir, rel, &res, buf)
	if !ok {
		// Changed since the scan, a link, gone: the GET says which (and
		// logs it).
		return http.StatusServiceUnavailable, nil
	}
	return http.StatusOK, b
}
