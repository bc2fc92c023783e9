package server

import (
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/resourcesync-go/resourcesync/internal/web"
)

// A document may be stored compressed: NAME.xml.gz in place of NAME.xml
// (publish.Config.GzipLists; serve stores its Resource List parts so, a
// quarter of their size on disk). Its URL is still NAME.xml, and every
// client gets the same document: a client that accepts gzip
// (web.AcceptsGzip: Python requests, Go, browsers, curl --compressed) the
// stored bytes as they are, with Content-Encoding: gzip and their own
// Content-Length (a Range then counts in those bytes, as RFC 9110 has it
// for a content coding); every other client (Java's HttpURLConnection,
// .NET's HttpClient, curl, wget) the XML decompressed while it is sent,
// with the XML's Content-Length (from the gzip trailer, so HEAD decodes
// nothing) and one Range answered on the XML (decoded up to its start;
// several ranges get the whole document). Both carry Vary:
// Accept-Encoding and the file's Last-Modified (documents have no ETag),
// so conditional requests behave as for a plain document.

// gzipSuffix is publish.GzipSuffix (not imported: the server does not
// depend on the writer).
const gzipSuffix = ".gz"

// maxGzipDoc bounds the decoded size a stored document may claim: a
// sitemap document is at most 50 MB, and the gzip trailer holds the size
// modulo 2^32.
const maxGzipDoc = 1 << 31

// openDoc opens the document rel below the document tree: the file rel,
// or else rel+".gz" for an XML document stored compressed (gz then set).
func (h *Handler) openDoc(rel string) (f *os.File, gz bool, err error) {
	f, err = openInside(h.Docs, rel)
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.HasSuffix(rel, ".xml") {
		return f, false, err
	}
	g, gerr := openInside(h.Docs, rel+gzipSuffix)
	if gerr != nil {
		if errors.Is(gerr, ErrLink) {
			return nil, false, gerr
		}
		return nil, false, err
	}
	return g, true, nil
}

// docReader returns a reader of the document's bytes: f itself, or its
// decompressed bytes.
func docReader(f *os.File, gz bool) (io.Reader, error) {
	if !gz {
		return f, nil
	}
	return gzip.NewReader(f)
}

// docReadCloser is docReader as an io.ReadCloser that closes f.
func docReadCloser(f *os.File, gz bool) (io.ReadCloser, error) {
	r, err := docReader(f, gz)
	if err != nil {
		f.Close()
		return nil, err
	}
	return struct {
		io.Reader
		io.Closer
	}{r, f}, nil
}

// serveGzipDoc answers a GET or HEAD of the document stored compressed
// in f (see above); the caller set Content-Type and Cache-Control.
func (h *Handler) serveGzipDoc(w http.ResponseWriter, r *http.Request, rel string, f *os.File, fi os.FileInfo) {
	w.Header().Add("Vary", "Accept-Encoding")
	if web.AcceptsGzip(r) {
		http.ServeContent(gzipHeader{w}, r, "", fi.ModTime(), f)
		return
	}
	size, err := gzipSize(f, fi.Size())
	if err != nil {
		h.log().Warn("server: compressed document not served", "doc", rel, "err", err)
		http.Error(w, "document unavailable", http.StatusInternalServerError)
		return
	}
	if strings.Contains(r.Header.Get("Range"), ",") {
		// Each range would decode the document from its start again.
		r2 := *r
		r2.Header = r.Header.Clone()
		r2.Header.Del("Range")
		r = &r2
	}
	http.ServeContent(w, r, "", fi.ModTime(), &gunzipSeeker{f: f, size: size})
}

// gzipHeader marks a successful answer (200, 206) as the gzip coding of
// the document: ServeContent then counts Content-Length and ranges in
// the stored bytes, and its other answers (304, 412, 416) carry no
// Content-Encoding.
type gzipHeader struct{ http.ResponseWriter }

func (g gzipHeader) WriteHeader(code int) {
	if code == http.StatusOK || code == http.StatusPartialContent {
		g.Header().Set("Content-Encoding", "gzip")
	}
	g.ResponseWriter.WriteHeader(code)
}

func (g gzipHeader) Unwrap() http.ResponseWriter { return g.ResponseWriter }

// gzipSize returns the decoded size the gzip trailer of f (stored bytes
// long) records.
func gzipSize(f *os.File, stored int64) (int64, error) {
	if stored < 18 { // a header and a trailer
		return 0, fmt.Errorf("%d bytes: not a gzip file", stored)
	}
	var t [4]byte
	if _, err := f.ReadAt(t[:], stored-4); err != nil {
		return 0, err
	}
	n := int64(binary.LittleEndian.Uint32(t[:]))
	if n >= maxGzipDoc {
		return 0, fmt.Errorf("decoded size %d too large", n)
	}
	return n, nil
}

// gunzipSeeker reads the decompressed bytes of f as an io.ReadSeeker of
// size bytes for http.ServeContent: a seek only records where the next
// read starts; the read decodes forward to it, from the start again when
// it lies behind. Memory is the decoder's window, whatever the size.
type gunzipSeeker struct {
	f    *os.File
	size int64
	zr   *gzip.Reader
	pos  int64 // decoded bytes read from zr
	want int64 // where the next Read starts
}

func (g *gunzipSeeker) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		off += g.want
	case io.SeekEnd:
		off += g.size
	}
	if off < 0 {
		return 0, errors.New("server: seek before the start of the document")
	}
	g.want = off
	return off, nil
}

func (g *gunzipSeeker) Read(p []byte) (int, error) {
	if g.zr == nil || g.want < g.pos {
		if _, err := g.f.Seek(0, io.SeekStart); err != nil {
			return 0, err
		}
		var err error
		if g.zr == nil {
			g.zr, err = gzip.NewReader(g.f)
		} else {
			err = g.zr.Reset(g.f)
		}
		if err != nil {
			return 0, err
		}
		g.zr.Multistream(false)
		g.pos = 0
	}
	if g.want > g.pos {
		n, err := io.CopyN(io.Discard, g.zr, g.want-g.pos)
		g.pos += n
		if err != nil {
			return 0, err
		}
	}
	n, err := g.zr.Read(p)
	g.pos += int64(n)
	g.want = g.pos
	return n, err
}
