package client

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/resourcesync-go/resourcesync/internal/bulk"
	"github.com/resourcesync-go/resourcesync/internal/linkheader"
	"github.com/resourcesync-go/resourcesync/rdf"
	"github.com/resourcesync-go/resourcesync/sdshare/atom"
	"github.com/resourcesync-go/resourcesync/sdshare/internal/fragbulk"
)

// The bulk fragment request of our own server (package
// sdshare/internal/fragbulk): when a fragments feed page's response
// advertises the endpoint on the page's own origin, the fragments its
// entries link below the collection's URL in N-Triples are asked for a
// batch at a time, in one POST each, instead of one GET each. Every
// member is parsed and checked exactly as a GET's body (parseFragment);
// a member the server did not send (its status said why), or that fails
// the check, is then fetched by its own GET, which retries, reports and
// fails it as usual. A broken stream (a member not asked for, too long,
// a truncation) sends the rest of the batch the same way; after
// maxBulkFailures failed requests the run makes no more.

// bulkBatch is the most fragments one bulk request asks for: small
// enough that the server's writing and the client's applying overlap
// (members are taken as they arrive), large enough that the exchange
// costs little a fragment.
const bulkBatch = 200

// maxBulkFailures: bulk requests that may fail before the run stops
// making them (the GETs then retry what a transient failure left).
const maxBulkFailures = 3

// bulkState is a run's use of the bulk request.
type bulkState struct {
	failures atomic.Int32
	n        atomic.Int64 // fragments that came in bulk
}

func (b *bulkState) off() bool { return b.failures.Load() >= maxBulkFailures }

// bulkDir returns the collection URL of the endpoint the feed response
// fr advertises, or "" when there is none to use: turned off, absent,
// on another origin, or not of the shape our server gives it.
func (s *syncer) bulkDir(fr *feedResponse) string {
	if s.cfg.NoBulk || fr == nil || s.bulk.off() {
		return ""
	}
	base, err := url.Parse(fr.url)
	if err != nil {
		return ""
	}
	l, ok := linkheader.Find(linkheader.Parse(base, fr.header.Values("Link")), fragbulk.Rel)
	if !ok {
		return ""
	}
	hu, err := url.Parse(l.URL)
	if err != nil || hu.RawQuery != "" || hu.Fragment != "" || hu.User != nil ||
		!strings.EqualFold(hu.Scheme, base.Scheme) || !strings.EqualFold(hu.Host, base.Host) ||
		!strings.HasSuffix(hu.EscapedPath(), "/"+fragbulk.Sub) {
		return ""
	}
	if s.f.check(hu.String()) != nil {
		return ""
	}
	return strings.TrimSuffix(hu.String(), fragbulk.Sub)
}

// bulkPath returns the member path entry e's fragment is asked for by
// below dir, or false when it is fetched by its own GET: a malformed
// entry (whose GET reports why), a link in another format or elsewhere.
func bulkPath(dir string, e atom.Entry) (string, bool) {
	_, l, err := fragmentLink(e)
	if err != nil {
		return "", false
	}
	if f, _, ok := formatFor(l.Type); !ok || f != rdf.NTriples {
		return "", false
	}
	return fragbulk.Member(dir, l.Href)
}

// fetchBulk fetches the fragments of entries idx of fp (paths, below
// dir) in one request, delivers each that arrives whole and passes the
// check, and then fetches the others by their own GETs. It holds one of
// p.inflight's slots, given back before the GETs take theirs.
func (s *syncer) fetchBulk(ctx context.Context, fp *feedPage, dir string, idx []int, paths []string, wg *sync.WaitGroup) {
	p := fp.p
	rest := s.bulkFetch(ctx, fp, dir, idx, paths)
	<-p.inflight
	for _, i := range rest {
		select {
		case p.inflight <- struct{}{}:
		case <-ctx.Done():
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.fetchOne(ctx, fp, i)
		}()
	}
}

// fetchOne fetches the fragment of entry i of fp by its own GET and
// delivers it; it gives back the p.inflight slot its caller took.
func (s *syncer) fetchOne(ctx context.Context, fp *feedPage, i int) {
	p := fp.p
	f, err := s.fetchEntry(ctx, fp.entries[i])
	<-p.inflight
	var mem int64
	if err == nil {
		mem = p.hold(len(f.Triples))
	}
	fp.results[i] <- fetched{frag: f, err: err, mem: mem}
}

// bulkFetch makes the request and returns the entries it did not
// deliver.
func (s *syncer) bulkFetch(ctx context.Context, fp *feedPage, dir string, idx []int, paths []string) (rest []int) {
	var body strings.Builder
	if err := bulk.WriteRequest(&body, paths); err != nil {
		return idx
	}
	endpoint := dir + fragbulk.Sub
	resp, err := s.f.post(ctx, endpoint, bulk.MediaType, body.String())
	if err != nil {
		s.bulk.failures.Add(1)
		return idx
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || mt != bulk.MediaType {
		drain(resp)
		s.bulk.failures.Add(1)
		return idx
	}
	return s.readBulk(resp.Body, fp, dir, idx, paths)
}

// readBulk reads a bulk response body: it delivers each member that
// arrives whole and passes the check, and returns the entries it did not
// deliver.
func (s *syncer) readBulk(body io.Reader, fp *feedPage, dir string, idx []int, paths []string) (rest []int) {
	r := bulk.NewReader(body, paths)
	var buf []byte
	for k, i := range idx {
		m, err := r.Next(-1)
		if err != nil {
			// The stream cannot be trusted from here on.
			s.bulk.failures.Add(1)
			return append(rest, idx[k:]...)
		}
		if m.Status != http.StatusOK || m.Length > s.cfg.MaxFragmentBytes {
			rest = append(rest, i) // its GET gives the whole answer
			continue
		}
		if fp.p.full() {
			// Fragments wait for the store beyond what may be held
			// ahead: the rest come by GETs, admitted one by one.
			return append(rest, idx[k:]...)
		}
		if int64(cap(buf)) < m.Length {
			buf = make([]byte, m.Length) // at most bulk.MaxMember
		}
		buf = buf[:m.Length] // the parser copies what it keeps
		if _, err := io.ReadFull(m.Body, buf); err != nil {
			s.bulk.failures.Add(1)
			return append(rest, idx[k:]...)
		}
		res, l, err := fragmentLink(fp.entries[i])
		if err != nil {
			rest = append(rest, i)
			continue
		}
		f, err := s.parseFragment(buf, rdf.NTriples, dir+paths[k], l.Href, res)
		if err != nil {
			rest = append(rest, i) // its GET fails it, or brings the right one
			continue
		}
		s.bulk.n.Add(1)
		fp.results[i] <- fetched{frag: f, mem: fp.p.hold(len(f.Triples)), bulk: true}
	}
	if _, err := r.Next(-1); !errors.Is(err, io.EOF) {
		s.bulk.failures.Add(1)
	}
	return rest
}
