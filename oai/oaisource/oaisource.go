package oaisource

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/redact"
	"github.com/resourcesync-go/resourcesync/oai/harvest"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/status"
)

// Config configures a Repository.
type Config struct {
	// Harvest configures the harvester (package oai/harvest). Its Dir is
	// the directory the Source publishes (the Source's one set); its
	// Committed and Log are set by New, which journals the pages in the
	// Source and logs to Logger.
	Harvest harvest.Config
	// Logger receives what the harvests log; nil discards it.
	Logger *slog.Logger
	// PublishEvery is how often a harvest into a running Source publishes
	// the documents of the pages journaled so far (each page is journaled
	// at once), so that a harvest of an hour is not published only at its
	// end; at most a fifth of the harvest's time goes to it, since each
	// publish rewrites the open Change List. 0: only the caller publishes
	// (a one-shot publish renders once after the harvest).
	PublishEvery time.Duration
	// FailureMessage words the log message of a failed harvest (err is
	// the harvester's: harvest.ErrTooManyRecords, harvest.ErrLowDiskSpace
	// or any other), so that a command can name its own flags; nil means
	// FailureMessage.
	FailureMessage func(err error) string
}

// FailureMessage is the default wording of a failed harvest's log
// message: what stopped it and what happens next.
func FailureMessage(err error) string {
	switch {
	case errors.Is(err, harvest.ErrTooManyRecords):
		return "harvest stopped at the bound on record files (MaxRecords); raise it if the repository is that large"
	case errors.Is(err, harvest.ErrLowDiskSpace):
		return "harvest stopped at the free space floor (MinFree); make room (or lower it) and the next harvest goes on"
	}
	return "harvest failed; the next one resumes from its last committed page"
}

// Repository is an OAI-PMH repository harvested into a Source's
// directory. Its methods are safe for concurrent use, but harvests must
// not overlap (Run runs them one at a time).
type Repository struct {
	h        *harvest.Harvester
	endpoint string
	shown    string // endpoint as printed, logged and shown: without secrets
	dir      string
	log      *slog.Logger
	every    time.Duration
	failure  func(error) string

	mu          sync.Mutex
	src         *source.Source
	lastPublish time.Time
	renderCost  time.Duration // of the last publish
	baseline    bool          // a harvest ran before the Source's first scan
}

// New opens the harvest state of cfg.Harvest (created if missing) and
// returns the Repository; Close releases it.
func New(cfg Config) (*Repository, error) {
	r := &Repository{
		endpoint: cfg.Harvest.Endpoint,
		shown:    redact.String(publicURL(cfg.Harvest.Endpoint)),
		dir:      cfg.Harvest.Dir,
		log:      cfg.Logger,
		every:    cfg.PublishEvery,
		failure:  cfg.FailureMessage,
	}
	if r.failure == nil {
		r.failure = FailureMessage
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	hc := cfg.Harvest
	hc.Log = r.log.With("oai-pmh", r.shown)
	hc.Committed = r.committed
	h, err := harvest.New(hc)
	if err != nil {
		return nil, err
	}
	r.h = h
	return r, nil
}

// Close releases the harvest state.
func (r *Repository) Close() error {
	if r == nil {
		return nil
	}
	return r.h.Close()
}

// Endpoint is the repository's base URL as it may be printed: without
// user information, secrets masked.
func (r *Repository) Endpoint() string { return r.shown }

// Dir is the directory the records are harvested into.
func (r *Repository) Dir() string { return r.dir }

// Status is the harvester's status.
func (r *Repository) Status() harvest.Status { return r.h.Status() }

// committed journals a page the harvester has made durable, and publishes
// at most every PublishEvery during a harvest.
func (r *Repository) committed(ctx context.Context, paths []string) error {
	r.mu.Lock()
	src := r.src
	r.mu.Unlock()
	if src == nil {
		return nil // the caller's scan after the harvest journals them
	}
	abs := make([]string, len(paths))
	for i, p := range paths {
		abs[i] = filepath.Join(r.dir, filepath.FromSlash(p))
	}
	if _, err := src.ScanPaths(ctx, abs); err != nil {
		return err
	}
	// A long harvest publishes as it goes, but spends at most a fifth of
	// its time on it: each publish rewrites the open Change List.
	if r.every > 0 && time.Since(r.lastPublish) >= max(r.every, 4*r.renderCost) {
		r.publish(ctx, src)
	}
	return nil
}

func (r *Repository) publish(ctx context.Context, src *source.Source) error {
	start := time.Now()
	_, err := src.Render(ctx)
	r.lastPublish, r.renderCost = time.Now(), time.Since(start)
	if err != nil && ctx.Err() == nil {
		r.log.Error("publishing the harvested records", "err", err)
	}
	return err
}

// Empty reports whether nothing was harvested yet (a new harvest state)
// and the directory is empty: the first harvest should then run before
// the Source's first scan (Harvest with a nil Source), which makes its
// records the baseline (journaled as the initial state, not as a million
// creations) and the first publish a complete one, Resource Dump
// included. An emptied or unmounted directory under an old state is not
// this case: its scan is refused as usual.
func (r *Repository) Empty() bool {
	if st := r.h.Status(); !st.LastEnd.IsZero() || st.LastError != "" {
		return false
	}
	f, err := os.Open(r.dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) == 0
}

// Harvest runs one harvest into the directory, journaling each page in
// src, and, with PublishEvery set, publishes src at the end. With a nil
// src nothing is journaled: the caller's scan of the directory does it
// afterwards (the first harvest, which Run then does not repeat). The
// outcome is logged; an error leaves what was committed in place, and
// the next harvest resumes from the last committed page.
func (r *Repository) Harvest(ctx context.Context, src *source.Source) (harvest.Stats, error) {
	r.mu.Lock()
	r.src = src
	if src == nil {
		r.baseline = true
	}
	r.mu.Unlock()
	r.log.Info("harvest started", "oai-pmh", r.shown)
	st, err := r.h.Harvest(ctx)
	if ctx.Err() != nil {
		return st, err
	}
	var perr error
	if src != nil && r.every > 0 {
		perr = r.publish(ctx, src)
	}
	if err != nil {
		r.log.Error(r.failure(err), "oai-pmh", r.shown, "err", r.Clean(err.Error()),
			"pages", st.Pages, "written", st.Written, "deleted", st.Deleted)
		return st, err
	}
	args := []any{"oai-pmh", r.shown, "pages", st.Pages, "written", st.Written, "unchanged", st.Unchanged,
		"deleted", st.Deleted, "malformed", st.Malformed, "collided", st.Collided, "full", st.Full, "records/s", int(RecordsPerSecond(st)),
		"took", st.Duration.Round(time.Millisecond)}
	if st.RemoveRefused > 0 {
		args = append(args, "remove-refused", st.RemoveRefused)
	}
	if st.Missed > 0 {
		// The harvester has logged "the repository's from missed N
		// changes" as a warning.
		args = append(args, "missed", st.Missed)
	}
	r.log.Info("harvested", args...)
	return st, perr
}

// Run harvests into src now (unless a harvest with a nil Source ran
// before: the baseline) and every interval (0: only the first) until ctx
// is done; rescan, if positive, is the interval of full rescans of the
// directory, run between harvests, never during one.
func (r *Repository) Run(ctx context.Context, src *source.Source, interval, rescan time.Duration) {
	var tick, rtick <-chan time.Time
	if interval > 0 {
		t := time.NewTicker(interval)
		defer t.Stop()
		tick = t.C
	}
	if rescan > 0 {
		t := time.NewTicker(rescan)
		defer t.Stop()
		rtick = t.C
	}
	r.mu.Lock()
	baseline := r.baseline
	r.mu.Unlock()
	if !baseline {
		r.Harvest(ctx, src)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			r.Harvest(ctx, src)
		case <-rtick:
			if _, err := src.Update(ctx); err != nil && ctx.Err() == nil {
				r.log.Error("rescan failed", "err", err)
			}
		}
	}
}

// Clean is s (an error of the harvest) as the status page and the log
// show it: the endpoint without its user information, and no secret
// (internal/redact) such as an API key in the endpoint's query.
func (r *Repository) Clean(s string) string {
	s = strings.ReplaceAll(s, r.endpoint, r.shown)
	// The request URLs in net/http's errors ("user:***@"): no user either.
	return redact.String(userinfoRE.ReplaceAllString(s, "${1}"))
}

var userinfoRE = regexp.MustCompile(`(?i)(https?://)[^/?#@\s"']*@`)

// publicURL is u without its user information (the page is public).
func publicURL(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.User == nil {
		return u
	}
	p.User = nil
	return p.String()
}

// RecordsPerSecond is the rate of a harvest: the records it listed
// (written, unchanged, deleted or malformed) per second.
func RecordsPerSecond(st harvest.Stats) float64 {
	if st.Duration <= 0 {
		return 0
	}
	return float64(st.Written+st.Unchanged+st.Deleted+st.Malformed) / st.Duration.Seconds()
}

// Section is the status page's view of the harvester (source.Config's
// StatusSections).
func (r *Repository) Section() status.Section {
	st := r.h.Status()
	sec := status.Section{ID: "oai-pmh", Title: "OAI-PMH repository"}
	fact := func(name, value, figure string) {
		sec.Facts = append(sec.Facts, status.Fact{Name: name, Value: value, Figure: figure})
	}
	fact("Repository", r.shown, "oai-endpoint")
	if st.Granularity != "" {
		fact("Granularity", st.Granularity, "")
	}
	fact("Records", fmt.Sprint(st.Records), "oai-records")
	if st.Running {
		fact("Harvest", "running now", "oai-running")
	}
	if st.LastEnd.IsZero() {
		fact("Last harvest", "none completed yet", "oai-last")
	} else {
		s := st.LastStats
		kind := "incremental"
		if s.Full {
			kind = "full"
		}
		fact("Last harvest", fmt.Sprintf("%s – %s (%s, %s)", st.LastStart.UTC().Format(time.RFC3339), st.LastEnd.UTC().Format(time.RFC3339), kind, s.Duration.Round(time.Millisecond)), "oai-last")
		fact("Records per second", fmt.Sprintf("%.0f", RecordsPerSecond(s)), "oai-rate")
		changes := fmt.Sprintf("%d written, %d unchanged, %d deleted, %d malformed (skipped), %d pages", s.Written, s.Unchanged, s.Deleted, s.Malformed, s.Pages)
		if s.Collided > 0 {
			changes += fmt.Sprintf(", %d refused (identifier differs only in case from another's, which this file system ignores)", s.Collided)
		}
		fact("Changes", changes, "oai-changes")
	}
	if !st.LastFull.IsZero() {
		v := st.LastFull.UTC().Format(time.RFC3339)
		if st.FullMissed > 0 {
			v += fmt.Sprintf(": the repository's from missed %d changes (the incremental harvests had not listed them)", st.FullMissed)
		}
		fact("Last full listing", v, "oai-full")
		fact("Missed by from", fmt.Sprint(st.FullMissed), "oai-from-missed")
	}
	if st.LastError != "" {
		e := r.Clean(st.LastError)
		sec.Problem = "The last harvest failed: " + e + ". The last state stays published; the next harvest resumes from the last committed page."
		fact("Last error", e, "oai-error")
	}
	return sec
}

// Unavailable answers every request on ln with 503 Service Unavailable
// and Retry-After while the first harvest runs (which may take an hour on
// a large repository): without it, connections were accepted by the
// kernel and then hung until the harvest ended, and a Destination saw
// timeouts instead of a reason to come back later. The returned function
// stops answering and leaves ln open for the Source's server. A listener
// without SetDeadline (not a TCP or Unix listener) is left alone.
func (r *Repository) Unavailable(ln net.Listener) (stop func()) {
	dl, ok := ln.(interface{ SetDeadline(time.Time) error })
	if !ok {
		return func() {}
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "60")
			w.Header().Set("Cache-Control", "no-store")
			http.Error(w, fmt.Sprintf("The first harvest of the OAI-PMH repository %s is running (%d records so far); the Source is served once it ends.",
				r.shown, r.h.Status().Records), http.StatusServiceUnavailable)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(keepOpen{ln, dl})
	}()
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if srv.Shutdown(ctx) != nil {
			srv.Close()
		}
		<-done
		dl.SetDeadline(time.Time{})
	}
}

// keepOpen is a listener whose Close only wakes a blocked Accept (the
// listener is handed on to the next server).
type keepOpen struct {
	net.Listener
	dl interface{ SetDeadline(time.Time) error }
}

func (k keepOpen) Close() error { return k.dl.SetDeadline(time.Now()) }
