package aggregate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/origin"
	"github.com/resourcesync-go/resourcesync/internal/redact"
)

// MaxSourcesSize bounds a sources list, read from a file or a URL.
const MaxSourcesSize = 16 << 20

const (
	// racyWindow: a file modified this recently may change again within
	// its mtime's granularity (2 s on FAT, 1 s on HFS+ and some network
	// file systems) with its size kept, which a stat cannot see; such a
	// file is read again at the next Load until its mtime is older.
	racyWindow = 3 * time.Second
	// urlLoadTimeout bounds one GET of a sources URL, so a stalled server
	// never holds up the reloads that follow (a SIGHUP among them).
	urlLoadTimeout = time.Minute
	// settleTime: a file modified more recently may be half written (an
	// editor or a shell writing in place): a Load leaves it for the next
	// one, unless it is the first Load or a Reload.
	settleTime = time.Second
)

// SourcesLoader reads a sources list, from a file or an http(s) URL, and
// tells whether it changed since its previous Load. It is safe for
// concurrent use (Loads are serialised).
//
// A file is read again only when its size, modification time or identity
// (inode: an editor that saves by renaming a new file over it) changed,
// and once its modification time is settleTime old (it may be half
// written before), but for the first Load and a Reload. Replace the file
// by renaming a new one over it (as editors do): one written in place may
// still be read half written, its old mtime kept for a moment. A
// URL is fetched with the validators of its previous response
// (If-None-Match, If-Modified-Since; 304 is "unchanged"), at most
// MaxSourcesSize bytes, its redirects kept on the URL's origin. An error
// is reported once: a Load that meets the error the previous one returned
// returns the list in force, unchanged, instead (a Reload returns it
// again).
type SourcesLoader struct {
	spec   string // as given, for messages
	path   string // absolute; "" for a URL
	url    string
	client *http.Client
	remote RemoteSources
	err    error // a bad spec, reported by every Load

	mu     sync.Mutex
	fi     os.FileInfo // of the file last read
	racy   bool        // fi's mtime was too recent to trust
	etag   string
	lastMo string
	last   []Source
	loaded bool  // last holds a parsed list
	bad    error // the parse error of the content fi or etag/lastMo describe
	shown  error // the error the last Load returned (nil: it succeeded)
}

// ErrPlainHTTPSources: a sources list at an http:// URL, which anyone on
// the path can rewrite (and so choose the hosts, credentials and DESTs of
// every Source), refused unless RemoteSources.AllowHTTP.
var ErrPlainHTTPSources = errors.New("a sources list over plain http can be rewritten by anyone on the path; use https, or allow it with --allow-http-sources")

// RemoteSources is what a sources list read from a URL is trusted with.
// Such a list chooses the hosts its Sources fetch from; the zero value
// trusts it with nothing beyond that: https only, and no local file.
type RemoteSources struct {
	// AllowHTTP accepts an http:// URL (loopback included: a local
	// proxy's port may be anyone's).
	AllowHTTP bool
	// FilesDir is the directory whose files (tokens, netrc files, CA
	// certificates) the list may name, by paths relative to it; "": none.
	FilesDir string
}

// NewSourcesLoader returns a loader of spec, a file path or an https://
// URL fetched with client (nil: http.DefaultClient), whose redirects may
// not leave the URL's scheme, host and port. A URL's list may name no
// local file and may not be plain http: see NewSourcesLoaderWith.
func NewSourcesLoader(spec string, client *http.Client) *SourcesLoader {
	return NewSourcesLoaderWith(spec, client, RemoteSources{})
}

// NewSourcesLoaderWith is NewSourcesLoader trusting a list read from a
// URL with what remote allows (a file's list is the operator's own and
// ignores it).
func NewSourcesLoaderWith(spec string, client *http.Client, remote RemoteSources) *SourcesLoader {
	l := &SourcesLoader{spec: spec, remote: remote}
	if lc := strings.ToLower(spec); strings.HasPrefix(lc, "http://") || strings.HasPrefix(lc, "https://") {
		l.url = spec
		// As messages name it: no password, no ?token= (internal/redact).
		l.spec = redact.String(spec)
		if u, err := url.Parse(spec); err == nil {
			l.spec = redact.String(u.Redacted())
		}
		if strings.HasPrefix(lc, "http://") && !remote.AllowHTTP {
			l.err = fmt.Errorf("sources %s: %w", l.spec, ErrPlainHTTPSources)
			return l
		}
		p, err := origin.New(spec, nil)
		if err != nil {
			l.err = fmt.Errorf("sources %s: %w", l.spec, err)
			return l
		}
		l.client = p.Client(client)
		return l
	}
	l.path = spec
	if a, err := filepath.Abs(spec); err == nil {
		l.path = a
	}
	return l
}

// String is the file or URL (its password hidden).
func (l *SourcesLoader) String() string { return l.spec }

// Load reads the list if it may have changed since the previous Load.
// changed is true when the Sources differ from those the previous
// successful Load returned (or it failed since); otherwise the previous
// list is returned. ss must not be modified. On an error the previous
// list stays in force (the aggregator keeps it): errors of the list
// itself match ErrSources, the others (missing file, HTTP failure) do not.
// The error the previous Load returned is not returned again: the list in
// force comes back, unchanged.
func (l *SourcesLoader) Load(ctx context.Context) (ss []Source, changed bool, err error) {
	return l.load(ctx, false)
}

// Reload is Load reading the list whatever its file's stat or URL's
// validators say (a SIGHUP).
func (l *SourcesLoader) Reload(ctx context.Context) (ss []Source, changed bool, err error) {
	return l.load(ctx, true)
}

func (l *SourcesLoader) load(ctx context.Context, force bool) ([]Source, bool, error) {
	if l.err != nil {
		return nil, false, l.err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var (
		ss        []Source
		unchanged bool
		err       error
	)
	if l.url != "" {
		ss, unchanged, err = l.loadURL(ctx, force)
	} else {
		ss, unchanged, err = l.loadFile(force)
	}
	switch {
	case err != nil && !force && l.shown != nil && l.shown.Error() == err.Error():
		// Nothing new: said already.
		l.shown = err
		return l.last, false, nil
	case err != nil:
		l.shown = err
		return nil, false, err
	case unchanged && l.bad != nil:
		// The list read last is still bad: said once, unless another
		// error (a failed read) was said since.
		if l.shown == l.bad {
			return l.last, false, nil
		}
		l.shown = l.bad
		return nil, false, l.bad
	case unchanged:
		// After a failed read, the list in force is good again: changed,
		// so that the caller clears the error it shows.
		changed := l.shown != nil
		l.shown = nil
		return l.last, changed, nil
	}
	changed := !l.loaded || l.shown != nil || !reflect.DeepEqual(ss, l.last)
	if changed {
		l.last = ss
	}
	l.loaded, l.shown = true, nil
	return l.last, changed, nil
}

// loadFile reads the file when its stat changed (or force); unchanged is
// true when it was not read.
func (l *SourcesLoader) loadFile(force bool) (ss []Source, unchanged bool, err error) {
	if !force && l.fi != nil {
		fi, err := os.Stat(l.path)
		if err == nil && (!l.racy && sameStat(l.fi, fi) || time.Since(fi.ModTime()) < settleTime) {
			return nil, true, nil
		}
	}
	f, err := os.Open(l.path)
	if err != nil {
		return nil, false, fmt.Errorf("sources: %w", err)
	}
	defer f.Close()
	// The stat of the file read, not of the path a moment before: a
	// rename in between is then seen at the next Load.
	fi, err := f.Stat()
	if err != nil {
		return nil, false, fmt.Errorf("sources: %w", err)
	}
	if fi.IsDir() {
		return nil, false, fmt.Errorf("sources %s: a directory, not a file", l.spec)
	}
	data, err := readLimited(f, fi.Size())
	if err != nil && !errors.Is(err, errTooLarge) {
		return nil, false, fmt.Errorf("sources %s: %w", l.spec, err)
	}
	if err == nil {
		ss, err = ParseSources(bytes.NewReader(data), filepath.Dir(l.path))
	}
	// Remembered even when the list is bad: it is reported once, not at
	// every poll, until the file changes.
	l.fi, l.racy = fi, time.Since(fi.ModTime()) < racyWindow
	l.bad = nil
	if err != nil {
		l.bad = fmt.Errorf("%s: %w", l.spec, err)
		return nil, false, l.bad
	}
	return ss, false, nil
}

// sameStat: the same file, of the same size and modification time.
func sameStat(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// errTooLarge: the list is larger than MaxSourcesSize, a fault of the
// list (reported once) rather than of reading it. It matches ErrSources.
var errTooLarge = fmt.Errorf("%w", ErrSources)

// readLimited reads r whole unless it is longer than MaxSourcesSize.
// size is its declared size (-1: unknown).
func readLimited(r io.Reader, size int64) ([]byte, error) {
	tooLarge := fmt.Errorf("%w: larger than %d MiB, the limit of a sources list", errTooLarge, MaxSourcesSize>>20)
	if size > MaxSourcesSize {
		return nil, tooLarge
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxSourcesSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxSourcesSize {
		return nil, tooLarge
	}
	return data, nil
}

// loadURL GETs the list, conditionally unless force; unchanged is true
// on 304 Not Modified.
func (l *SourcesLoader) loadURL(ctx context.Context, force bool) (ss []Source, unchanged bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, urlLoadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.url, nil)
	if err != nil {
		return nil, false, fmt.Errorf("sources %s: %w", l.spec, err)
	}
	req.Header.Set("Accept", "text/plain, */*;q=0.1")
	conditional := !force && (l.etag != "" || l.lastMo != "")
	if conditional {
		if l.etag != "" {
			req.Header.Set("If-None-Match", l.etag)
		}
		if l.lastMo != "" {
			req.Header.Set("If-Modified-Since", l.lastMo)
		}
	}
	resp, err := l.client.Do(req)
	if err != nil {
		// The *url.Error names the URL already (its password hidden, not
		// a ?token=).
		return nil, false, redact.Error(fmt.Errorf("sources: %w", err))
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotModified && conditional:
		return nil, true, nil
	case resp.StatusCode != http.StatusOK:
		return nil, false, fmt.Errorf("sources %s: %s", l.spec, resp.Status)
	}
	data, err := readLimited(resp.Body, resp.ContentLength)
	if err != nil && !errors.Is(err, errTooLarge) {
		return nil, false, fmt.Errorf("sources %s: %w", l.spec, err)
	}
	if err == nil {
		ss, err = ParseRemoteSources(bytes.NewReader(data), l.remote.FilesDir)
	}
	l.etag, l.lastMo = resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	l.bad = nil
	if err != nil {
		l.bad = fmt.Errorf("%s: %w", l.spec, err)
		return nil, false, l.bad
	}
	return ss, false, nil
}

// WatchSources keeps the aggregator's Sources in step with l until ctx
// ends: it loads at once, then every `every` (0: never) and at each
// signal from hup (a SIGHUP: see NotifyReload; nil: none), which reads
// the list whatever its stat. apply receives the Sources when they
// changed and parsed (a caller that applied a first Load itself is not
// called again for the same list); fail receives each error, after which
// the previous Sources stay in force.
//
// A file is polled with a stat rather than watched with fsnotify:
// inotify and its kin lose a file that an editor or a ConfigMap replaces
// by renaming, deliver nothing on NFS, SMB and many container mounts, and
// differ per OS, while a stat every few seconds is portable and costs
// nothing. A URL is polled with a conditional GET (every minute is ample).
func WatchSources(ctx context.Context, l *SourcesLoader, every time.Duration, hup <-chan os.Signal, apply func([]Source), fail func(error)) {
	load := func(force bool) {
		var (
			ss      []Source
			changed bool
			err     error
		)
		if force {
			ss, changed, err = l.Reload(ctx)
		} else {
			ss, changed, err = l.Load(ctx)
		}
		switch {
		case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
			// Stopping: not a failure of the list.
		case err != nil:
			fail(err)
		case changed:
			apply(ss)
		}
	}
	load(false)
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			load(false)
		case _, ok := <-hup:
			if !ok {
				hup = nil
				continue
			}
			load(true)
		}
	}
}
