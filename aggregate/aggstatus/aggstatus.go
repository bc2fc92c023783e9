package aggstatus

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/resourcesync-go/resourcesync/aggregate"
	"github.com/resourcesync-go/resourcesync/destination/status"
	"github.com/resourcesync-go/resourcesync/internal/web"
)

// Orders of the Source list (?sort=).
const (
	// SortErrors, the default: the most consecutive failures first, then
	// by reason (Sources with a reason before those without), then as
	// SortLag.
	SortErrors = "errors"
	// SortLag: the furthest behind first; a Source whose lag is not known
	// yet after every known one.
	SortLag = "lag"
	// SortSuccess: the oldest last success first, a Source that never
	// succeeded before all.
	SortSuccess = "success"
	// SortName: by ID.
	SortName = "name"
)

// Sorts lists the orders, in the page's order of links.
var Sorts = []string{SortErrors, SortLag, SortSuccess, SortName}

// ErrSort is returned by Sort for an order it does not know.
var ErrSort = errors.New("unknown sort order (want errors, lag, success or name)")

// Sort orders sources in place by one of the Sort* orders ("" is
// SortErrors). Ties are broken by ID, so the order is total.
func Sort(sources []aggregate.SourceStatus, by string) error {
	var f func(a, b *aggregate.SourceStatus) int
	switch by {
	case "", SortErrors:
		f = func(a, b *aggregate.SourceStatus) int {
			if c := cmp.Compare(b.Failures, a.Failures); c != 0 {
				return c
			}
			if (a.Reason == "") != (b.Reason == "") {
				if a.Reason != "" {
					return -1
				}
				return 1
			}
			if c := cmp.Compare(a.Reason, b.Reason); c != 0 {
				return c
			}
			return byLag(a, b)
		}
	case SortLag:
		f = byLag
	case SortSuccess:
		f = func(a, b *aggregate.SourceStatus) int { return a.LastSuccess.Compare(b.LastSuccess) }
	case SortName:
		f = func(a, b *aggregate.SourceStatus) int { return 0 }
	default:
		return fmt.Errorf("%w: %q", ErrSort, clip(by))
	}
	slices.SortStableFunc(sources, func(a, b aggregate.SourceStatus) int {
		if c := f(&a, &b); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return nil
}

func byLag(a, b *aggregate.SourceStatus) int {
	if a.LagKnown != b.LagKnown {
		if a.LagKnown {
			return -1
		}
		return 1
	}
	return cmp.Compare(b.Lag, a.Lag)
}

// Sanitize returns a copy of s fit to show: the engine already removes
// user information from URLs, but every output of this package goes
// through here too, so that a Source's text (an error quoting a URL with
// a password, markup, invalid UTF-8, a megabyte of it) is redacted, valid
// and bounded whatever the engine did.
func Sanitize(s aggregate.Snapshot) aggregate.Snapshot {
	s.Node = clip(s.Node)
	s.Store = clip(status.Redact(s.Store))
	s.SourcesError = clip(status.RedactText(s.SourcesError))
	src := make([]aggregate.SourceStatus, len(s.Sources))
	for i, x := range s.Sources {
		x.ID = clip(x.ID)
		x.URL = clip(status.Redact(x.URL))
		x.Dest = clip(x.Dest)
		x.Kind = clip(x.Kind)
		x.State = clip(x.State)
		x.Node = clip(x.Node)
		x.Reason = clip(x.Reason)
		x.LastError = clip(status.RedactText(x.LastError))
		if x.Graphs != nil {
			g := make([]string, len(x.Graphs))
			for j, v := range x.Graphs {
				g[j] = clip(status.Redact(v))
			}
			x.Graphs = g
		}
		src[i] = x
	}
	s.Sources = src
	return s
}

// clip makes s valid UTF-8 and cuts it to status.MaxText bytes at a
// character boundary.
func clip(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= status.MaxText {
		return s
	}
	cut := status.MaxText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Options configure Handler.
type Options struct {
	// Snapshot returns the aggregator's view (aggregate.Aggregator's
	// Snapshot), required; it is called once per request (twice for a
	// Source's page: its id must be listed).
	Snapshot func() aggregate.Snapshot
	// Detail returns the page of one Source (its mirror's
	// destination/status Recorder's Handler), served under
	// /source/<url.PathEscape(id)>/ with that prefix stripped; nil (or a
	// nil Detail) for none: not found.
	Detail func(id string) http.Handler
}

// Handler serves:
//
//	/                      the page of every Source (?sort=errors|lag|success|name)
//	/status.json           the Snapshot as JSON, sorted as asked (?sort=)
//	/metrics               Prometheus metrics (NewCollector, and the Go and process collectors)
//	/source/<escaped id>/  the Source's own page (Options.Detail)
//
// It answers GET and HEAD only (a Source's page may answer more); it
// shows, never changes.
func Handler(opt Options) http.Handler {
	metrics := metricsHandler(opt.Snapshot)
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p := req.URL.EscapedPath()
		if rest, ok := strings.CutPrefix(p, "/source/"); ok {
			detail(w, req, opt, rest)
			return
		}
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		switch p {
		case "/", "/index.html", "/status.json":
		case "/metrics":
			metrics.ServeHTTP(w, req)
			return
		default:
			http.NotFound(w, req)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		by := req.URL.Query().Get("sort")
		s := Sanitize(opt.Snapshot())
		if err := Sort(s.Sources, by); err != nil {
			http.Error(w, ErrSort.Error(), http.StatusBadRequest) // not the value: no echo
			return
		}
		var b bytes.Buffer
		if p == "/status.json" {
			if err := writeJSON(&b, s); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("X-Content-Type-Options", "nosniff")
		} else {
			if err := writeHTML(&b, s, by, true, opt.Detail != nil); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			web.SetHeaders(w.Header())
		}
		w.Write(b.Bytes())
	})
}

func writeJSON(b *bytes.Buffer, s aggregate.Snapshot) error {
	if s.Sources == nil {
		s.Sources = []aggregate.SourceStatus{}
	}
	j, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	b.Write(j)
	b.WriteByte('\n')
	return nil
}

// detail serves /source/<escaped id>/<rest>: the id is one escaped path
// segment, looked up among the Snapshot's Sources (an id it does not list
// is not found, so no crafted id, "..", or a slash, reaches Detail).
func detail(w http.ResponseWriter, req *http.Request, opt Options, rest string) {
	seg, tail, slash := strings.Cut(rest, "/")
	id, err := url.PathUnescape(seg)
	if err != nil || id == "" || opt.Detail == nil || !listed(opt.Snapshot(), id) {
		http.NotFound(w, req)
		return
	}
	if !slash {
		// /source/x → /source/x/: the Source's page links relatively.
		// Relative to the request, written by hand: http.Redirect would
		// resolve it against the unescaped path, whose slashes are the
		// id's. "./" keeps an id such as "a:b" from reading as a scheme.
		w.Header().Set("Location", "./"+url.PathEscape(id)+"/")
		w.WriteHeader(http.StatusMovedPermanently)
		return
	}
	h := opt.Detail(id)
	if h == nil {
		http.NotFound(w, req)
		return
	}
	r2 := new(http.Request)
	*r2 = *req
	r2.URL = new(url.URL)
	*r2.URL = *req.URL
	r2.URL.RawPath = "/" + tail
	r2.URL.Path, err = url.PathUnescape(r2.URL.RawPath)
	if err != nil {
		http.NotFound(w, req)
		return
	}
	h.ServeHTTP(w, r2)
}

func listed(s aggregate.Snapshot, id string) bool {
	for _, x := range s.Sources {
		if x.ID == id {
			return true
		}
	}
	return false
}

// WriteReport writes s as a self-contained HTML page (no refresh, no
// script, nothing to load: the stylesheet is inline) to path, in the
// default order, atomically: a temporary file beside it, synced, then
// renamed over it, so a reader never sees half a report.
func WriteReport(path string, s aggregate.Snapshot) error {
	s = Sanitize(s)
	Sort(s.Sources, SortErrors)
	var b bytes.Buffer
	if err := writeHTML(&b, s, SortErrors, false, false); err != nil {
		return err
	}
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	// 0666 less the umask, as any file the user writes (CreateTemp's
	// 0600 would make a report for a web server unreadable to it).
	tmp := filepath.Join(dir, fmt.Sprintf(".%s.tmp-%d", name, rand.Int64()))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return fmt.Errorf("writing report: %w", err)
	}
	_, err = f.Write(b.Bytes())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing report: %w", err)
	}
	return nil
}
