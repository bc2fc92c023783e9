package client

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// DefaultMaxSnapshotBytes bounds a snapshot (all its chunks), counted as
// the parser reads it, after any Content-Encoding is decoded. Snapshots
// stream into the store, so memory does not grow with them; the bound is
// on the disk, CPU and time one server can cost a run: 4 GiB is above the
// snapshots SDShare servers publish, and MaxSnapshotBytes raises it. The
// embedded store (boltstore) spools a snapshot whole before it loads it,
// so one refused at the bound costs a temporary file of about its size,
// deleted at once, and leaves the store's file as it was.
const DefaultMaxSnapshotBytes = 4 << 30

// A gzip body may expand up to about a thousandfold: a 1 MB body became
// 33.5 million triples. Past expansionFloor decoded bytes, a body may
// yield at most maxExpansion times the compressed bytes read so far
// (RDF text compresses 5 to 30 fold; 200 is also the ZIP member ratio of
// destination/dump), so the work a server can cause stays proportional
// to what it sends; MaxSnapshotBytes and MaxFragmentBytes bound the
// decoded total as well.
const (
	maxExpansion   = 200
	expansionFloor = 16 << 20
)

// fragmentMemoryFactor bounds the memory of a fragment's statements to
// this many times MaxFragmentBytes (Config.MaxFragmentBytes).
const fragmentMemoryFactor = 8

// acceptGzip asks for gzip on req itself, so that the transport leaves
// the body compressed and gunzip can watch its expansion.
func acceptGzip(req *http.Request) { req.Header.Set("Accept-Encoding", "gzip") }

// gunzip decodes a gzip Content-Encoding of resp as the transport would,
// but bounded (gunzipBody).
func gunzip(resp *http.Response, url string) {
	if !strings.EqualFold(strings.TrimSpace(resp.Header.Get("Content-Encoding")), "gzip") {
		return
	}
	resp.Body = &gunzipBody{src: resp.Body, url: url}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	resp.Uncompressed = true
}

// gunzipBody decodes a gzip body, failing with ErrTooLarge (permanent:
// the same bytes would expand the same way) when it expands more than
// maxExpansion-fold past expansionFloor.
type gunzipBody struct {
	src     io.ReadCloser
	url     string
	zr      *gzip.Reader
	in, out int64
	err     error
	started bool
}

func (g *gunzipBody) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if !g.started {
		g.started = true
		zr, err := gzip.NewReader(countingReader{g})
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			g.err = fmt.Errorf("gzip body: %w", err)
			return 0, g.err
		}
		g.zr = zr
	}
	n, err := g.zr.Read(p)
	g.out += int64(n)
	if g.out > expansionFloor && g.out > maxExpansion*g.in {
		g.err = fmt.Errorf("%w: %s: the gzip body expands more than %d-fold (%d bytes from %d)", ErrTooLarge, g.url, maxExpansion, g.out, g.in)
		return 0, g.err
	}
	return n, err
}

func (g *gunzipBody) Close() error { return g.src.Close() }

// countingReader reads the compressed bytes, counting them.
type countingReader struct{ g *gunzipBody }

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.g.src.Read(p)
	c.g.in += int64(n)
	return n, err
}

// capReader fails a snapshot whose parts together pass max bytes (as
// read: after gunzip decoded a Content-Encoding): the error is permanent
// (ErrTooLarge), not a transfer to retry; so is a gzip body's.
type capReader struct {
	r   io.Reader
	n   *int64 // shared by the parts of one snapshot
	max int64
	url string
	err error
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if room := c.max - *c.n + 1; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := c.r.Read(p)
	if errors.Is(err, ErrTooLarge) {
		// A gzip bomb (gunzipBody): kept, lest the reader report the
		// line it cut short instead.
		c.err = err
		return n, err
	}
	*c.n += int64(n)
	if *c.n > c.max {
		c.err = fmt.Errorf("%w: snapshot longer than %d bytes (decoded) at %s", ErrTooLarge, c.max, c.url)
		return 0, c.err
	}
	return n, err
}
