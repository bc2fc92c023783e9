package server

import (
	"bufio"
	"net/http"

	"github.com/resourcesync-go/resourcesync/internal/bulk"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/internal/fragbulk"
)

// The bulk fragment request (package sdshare/internal/fragbulk has the
// design, internal/bulk the wire format): POST B NAME/bulk with fragment
// URLs relative to the collection's URL answers each with the bytes a GET
// of it with format=nt gives, so that a client applying thousands of
// changes makes one request per batch instead of one per fragment. The
// fragments feed advertises it with a Link header (bulkLink), never in
// the feed.

// bulkLink adds the Link header that advertises c's endpoint.
func (c *Collection) bulkLink(h http.Header) {
	if !c.srv.cfg.NoBulk {
		h.Add("Link", "<"+c.URL()+fragbulk.Sub+`>; rel="`+fragbulk.Rel+`"`)
	}
}

func (c *Collection) serveBulk(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed: POST the fragment URLs, one a line", http.StatusMethodNotAllowed)
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
	// One version for the whole response, as one feed page reads one.
	v := c.acquire()
	defer c.release(v)
	var line []byte
	for _, p := range paths {
		if r.Context().Err() != nil {
			return // the client left: no end line, it sees a truncated stream
		}
		st, b := c.bulkMember(v, p)
		line = bulk.AppendHeader(line[:0], st, len(b), p)
		bw.Write(line)
		if _, err := bw.Write(b); err != nil {
			return
		}
	}
	bw.WriteString(bulk.End)
	bw.Flush()
}

// bulkMember answers one path: 200 and the fragment's N-Triples, or a
// status without bytes (the client then GETs the fragment and gets the
// whole answer).
func (c *Collection) bulkMember(v *version, p string) (int, []byte) {
	res, format, ok := fragbulk.ParseMember(p)
	switch {
	case !ok:
		return http.StatusNotFound, nil
	case format != "" && format != "nt" && format != "txt":
		return http.StatusNotAcceptable, nil // N-Triples only
	}
	b, err := c.fragmentOf(v, res, rdf.NTriples)
	switch {
	case err != nil:
		c.srv.log.Error("fragment not written", "collection", c.name, "resource", res, "err", err)
		return http.StatusInternalServerError, nil
	case len(b) > bulk.MaxMember:
		return http.StatusRequestEntityTooLarge, nil
	}
	return http.StatusOK, b
}

// isBulk reports whether sub (the path below a collection's URL) is the
// bulk endpoint.
func isBulk(sub string) bool { return sub == fragbulk.Sub }
