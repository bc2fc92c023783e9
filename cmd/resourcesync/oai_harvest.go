package main

import (
	"context"
	"errors"
	"fmt"
	"io"
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

	"github.com/urfave/cli/v3"

	"github.com/resourcesync-go/resourcesync/internal/redact"
	"github.com/resourcesync-go/resourcesync/oai/harvest"
	"github.com/resourcesync-go/resourcesync/source"
	"github.com/resourcesync-go/resourcesync/source/status"
)

// oaiHelp is the part of serve's and publish's help on --oai-pmh.
const oaiHelp = `

OAI-PMH REPOSITORY (--oai-pmh URL)
   With --oai-pmh, the Source publishes the records of an OAI-PMH 2.0
   repository (DSpace, EPrints, Invenio, OJS, ...) instead of a directory of
   your own: its ListRecords are harvested into DIR, one file per record and
   metadata prefix, and DIR is published as usual (journal, Change Lists,
   dumps, notifications, status page). DIR and --state are required; DIR is
   created if missing, --state must lie outside DIR (the harvest state is
   kept in STATE/oai-pmh). Nothing else may write in DIR.
   A record is the resource BASE/PREFIX/HH/IDENTIFIER.xml (HH: two hex
   digits spreading the records over 256 directories; the identifier with
   '%', '/', '?', '*', '<', '>', '"', '|', '\' and control bytes
   percent-encoded), its bytes the record's <metadata> child serialised
   canonically (an unchanged record is never journaled again), its lastmod
   the record's datestamp. Deleted records are journaled as deletions;
   records with bad XML or without identifier are skipped with a warning.
   The first harvest lists everything; the next ones ask for the records
   changed since the last one (from, overlapping by one granule). Every
   --oai-full-every (default 24h; 0: never) a harvest also lists every
   record again, whatever the repository: only records whose canonical
   bytes changed are written and journaled, so it finds what a wrong from
   hid (a provider answering from=D as if it were a month later says
   noRecordsMatch while records change; the log and the status page then
   say "the repository's from missed N changes"), the deletions of a
   repository that does not report them, and the records that left an
   --oai-set (also removed at once when their header names only other
   sets). A full pass that lists nothing at all removes nothing, nor does
   one that would remove more than --oai-max-delete percent of the records
   (default 50; a listing cut short looks like mass deletions).
   resumptionTokens (with expiry and list size), noRecordsMatch and 503
   Retry-After are handled. A record whose canonical form would be over 16
   times its size (a namespace declared once, used on many elements) is
   skipped with a warning. At most --oai-max-records record files are
   kept (default 20,000,000; the largest repositories hold a few
   million), and --oai-min-free bytes (default 1 GiB) are left free on
   DIR's file system: a repository listing endless records stops the
   harvest with an error before the page that would cross either is
   written.
   Each harvested page is journaled as a whole (never half a page, even
   after kill -9): the harvester itself names the files it changed, so
   --watch is refused with --oai-pmh and --rescan-interval is off unless
   given (then its full rescans run between harvests, never during one).
   A harvest that fails is logged and tried again at the next interval
   from its last committed page; the last state stays published.
   The first harvest (empty DIR, new state) runs before the first publish
   and is the Source's baseline, as a directory's first scan: the records
   are listed, no change is journaled; meanwhile serve answers every
   request with 503 and Retry-After. serve then harvests every
   --oai-interval (publishing a long harvest as it goes); its status page
   shows the repository, the last harvest, records per second and the last
   error. publish harvests once, then publishes; it exits 1 if the harvest
   failed (what was harvested before the failure is published).
   Example: resourcesync serve --oai-pmh https://repo.example.org/oai
            --metadata-prefix oai_dc --state /var/lib/rs/state /var/lib/rs/records`

// oaiFlags are the flags of --oai-pmh; interval only for serve.
func oaiFlags(serve bool) []cli.Flag {
	fl := []cli.Flag{
		&cli.StringFlag{Name: "oai-pmh", Usage: "publish the records of the OAI-PMH repository at this base URL, harvested into DIR (see OAI-PMH REPOSITORY above)"},
		&cli.StringSliceFlag{Name: "metadata-prefix", Usage: "with --oai-pmh: harvest this metadata prefix (repeatable)", Value: []string{"oai_dc"}},
		&cli.StringSliceFlag{Name: "oai-set", Usage: "with --oai-pmh: harvest only this set spec (repeatable; default the whole repository)"},
		&cli.DurationFlag{Name: "oai-full-every", Usage: "with --oai-pmh: list every record again at this interval (0: never), to find the changes a wrong from hid, unreported deletions and records that left an --oai-set", Value: 24 * time.Hour},
		&cli.Int64Flag{Name: "oai-max-records", Usage: "with --oai-pmh: keep at most `N` record files (-1: no bound); a harvest that would write more stops with an error", Value: harvest.DefaultMaxRecords},
		&cli.IntFlag{Name: "oai-max-delete", Usage: "with --oai-pmh: a full pass removes nothing when it would remove more than `PCT` percent of the records (and more than 10; 100: no bound)", Value: harvest.DefaultFullMaxRemove},
		&SizeFlag{Name: "oai-min-free", Usage: "with --oai-pmh: leave at least `SIZE` (bytes, KiB, MiB, GiB) free on DIR's file system (0: no floor); a harvest that would leave less stops with an error", Value: harvest.DefaultMinFree},
	}
	if serve {
		fl = append(fl, &cli.DurationFlag{Name: "oai-interval", Usage: "with --oai-pmh: harvest at this interval", Value: 10 * time.Minute})
	}
	return fl
}

// oaiPublishEvery is how often a long harvest publishes the documents of
// the pages journaled so far (each page is journaled at once).
var oaiPublishEvery = 5 * time.Second

// oaiSource is an OAI-PMH repository harvested into the Source's
// directory.
type oaiSource struct {
	h        *harvest.Harvester
	endpoint string
	shown    string // endpoint as printed, logged and shown: without secrets
	dir      string
	log      *slog.Logger

	mu          sync.Mutex
	src         *source.Source
	lastPublish time.Time
	renderCost  time.Duration // of the last publish
	first       bool          // the first harvest ran before the Source's first scan
	// every is how often a harvest publishes what it journaled so far
	// (serve); 0: only the caller publishes (publish).
	every time.Duration
}

// checkOAIArgs checks the arguments of --oai-pmh before sourceConfig
// (which needs DIR to exist) and creates DIR.
func checkOAIArgs(cmd *cli.Command) error {
	if cmd.String("oai-pmh") == "" {
		for _, f := range []string{"metadata-prefix", "oai-set", "oai-full-every", "oai-max-records", "oai-max-delete", "oai-min-free", "oai-interval"} {
			if cmd.IsSet(f) {
				return usageError(cmd, "--"+f+" needs --oai-pmh URL")
			}
		}
		return nil
	}
	u := cmd.String("oai-pmh")
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		return usageError(cmd, fmt.Sprintf("--oai-pmh %q: want the repository's http(s) base URL", u))
	}
	if cmd.Duration("oai-full-every") < 0 {
		return usageError(cmd, "--oai-full-every: want a duration, or 0 for no full pass")
	}
	if n := cmd.Int64("oai-max-records"); n == 0 || n < -1 {
		return usageError(cmd, "--oai-max-records: want a positive number, or -1 for no bound")
	}
	if n := cmd.Int("oai-max-delete"); n < 1 || n > 100 {
		return usageError(cmd, "--oai-max-delete: want a percentage from 1 to 100 (100: no bound)")
	}
	if cmd.Int64("oai-min-free") < 0 {
		return usageError(cmd, "--oai-min-free: want a number of bytes, or 0 for no floor")
	}
	if len(cmd.StringSlice("set")) > 0 {
		return usageError(cmd, "--oai-pmh publishes one directory: no --set (use --oai-set to harvest a repository's sets)")
	}
	if cmd.IsSet("watch") && cmd.Bool("watch") {
		return usageError(cmd, "--watch with --oai-pmh: the harvester names the files it changes (see OAI-PMH REPOSITORY)")
	}
	dir := cmd.Args().First()
	if dir == "" || cmd.Args().Len() > 1 {
		return usageError(cmd, "--oai-pmh URL DIR: give one DIR, where the records are kept")
	}
	state := cmd.String("state")
	if state == "" {
		return usageError(cmd, "--oai-pmh: give --state, outside DIR (the harvest state is kept there)")
	}
	if inside(state, dir) {
		return usageError(cmd, "--oai-pmh: --state must lie outside DIR")
	}
	if isPostgresURL(cmd.String("store")) {
		return usageError(cmd, "--oai-pmh with a shared --store postgres://: not supported yet (replicas would each harvest); use the default store")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return cli.Exit(err.Error(), exitUsage)
	}
	return nil
}

// inside reports whether p is dir or lies in it (after making both
// absolute and resolving symbolic links where they exist).
func inside(p, dir string) bool {
	abs := func(s string) string {
		a, err := filepath.Abs(s)
		if err != nil {
			return filepath.Clean(s)
		}
		if r, err := filepath.EvalSymlinks(a); err == nil {
			return r
		}
		return a
	}
	a, d := abs(p), abs(dir)
	rel, err := filepath.Rel(d, a)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// newOAISource opens the harvester of --oai-pmh (nil when not given) and
// adds its section to the status page of cfg.
func newOAISource(cmd *cli.Command, cfg *source.Config) (*oaiSource, error) {
	u := cmd.String("oai-pmh")
	if u == "" {
		return nil, nil
	}
	o := &oaiSource{endpoint: u, shown: redact.String(publicURL(u)), dir: cfg.Sets[0].Dir, log: cfg.Logger}
	if o.log == nil {
		o.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	h, err := harvest.New(harvest.Config{
		Endpoint:      u,
		Prefixes:      cmd.StringSlice("metadata-prefix"),
		Sets:          cmd.StringSlice("oai-set"),
		Dir:           o.dir,
		State:         filepath.Join(cfg.StateDir, "oai-pmh"),
		Client:        syncClient(4, time.Minute),
		FullEvery:     oaiFullEvery(cmd.Duration("oai-full-every")),
		MaxRecords:    cmd.Int64("oai-max-records"),
		MinFree:       oaiMinFree(cmd.Int64("oai-min-free")),
		FullMaxRemove: cmd.Int("oai-max-delete"),
		Log:           o.log.With("oai-pmh", o.shown),
		Committed:     o.committed,
	})
	if err != nil {
		return nil, cli.Exit("--oai-pmh: "+err.Error(), exitUsage)
	}
	o.h = h
	cfg.StatusSections = func() []status.Section { return []status.Section{o.section()} }
	return o, nil
}

// oaiFullEvery is harvest.Config.FullEvery for --oai-full-every d: 0
// there means no full pass (negative for the harvester, whose 0 is its
// default).
func oaiFullEvery(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// oaiMinFree is harvest.Config.MinFree for --oai-min-free n: 0 there
// means no floor.
func oaiMinFree(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}

// Close releases the harvest state.
func (o *oaiSource) Close() error {
	if o == nil {
		return nil
	}
	return o.h.Close()
}

// committed journals a page the harvester has made durable, and publishes
// at most every oaiPublishEvery during a harvest.
func (o *oaiSource) committed(ctx context.Context, paths []string) error {
	o.mu.Lock()
	src := o.src
	o.mu.Unlock()
	if src == nil {
		return nil // publish: the full scan after the harvest journals them
	}
	abs := make([]string, len(paths))
	for i, p := range paths {
		abs[i] = filepath.Join(o.dir, filepath.FromSlash(p))
	}
	if _, err := src.ScanPaths(ctx, abs); err != nil {
		return err
	}
	// A long harvest publishes as it goes, but spends at most a fifth of
	// its time on it: each publish rewrites the open Change List.
	if o.every > 0 && time.Since(o.lastPublish) >= max(o.every, 4*o.renderCost) {
		o.publish(ctx, src)
	}
	return nil
}

func (o *oaiSource) publish(ctx context.Context, src *source.Source) error {
	start := time.Now()
	_, err := src.Render(ctx)
	o.lastPublish, o.renderCost = time.Now(), time.Since(start)
	if err != nil && ctx.Err() == nil {
		o.log.Error("publishing the harvested records", "err", err)
	}
	return err
}

// empty reports whether nothing was harvested yet (a new harvest state)
// and DIR is empty: the first harvest then runs before the Source's first
// scan, which makes its records the baseline (journaled as the initial
// state, not as a million creations) and the first publish a complete
// one, Resource Dump included. An emptied or unmounted DIR under an old
// state is not this case: its scan is refused as usual.
func (o *oaiSource) empty() bool {
	if st := o.h.Status(); !st.LastEnd.IsZero() || st.LastError != "" {
		return false
	}
	f, err := os.Open(o.dir)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) == 0
}

// harvest runs one harvest into DIR, journaling each page in src (nil:
// the caller scans DIR afterwards), then, with every set, publishes.
func (o *oaiSource) harvest(ctx context.Context, src *source.Source) (harvest.Stats, error) {
	o.mu.Lock()
	o.src = src
	o.mu.Unlock()
	o.log.Info("harvest started", "oai-pmh", o.shown)
	st, err := o.h.Harvest(ctx)
	if ctx.Err() != nil {
		return st, err
	}
	var perr error
	if src != nil && o.every > 0 {
		perr = o.publish(ctx, src)
	}
	if err != nil {
		msg := "harvest failed; the next one resumes from its last committed page"
		switch {
		case errors.Is(err, harvest.ErrTooManyRecords):
			msg = "harvest stopped at --oai-max-records; raise it if the repository is that large"
		case errors.Is(err, harvest.ErrLowDiskSpace):
			msg = "harvest stopped at --oai-min-free; make room (or lower it) and the next harvest goes on"
		}
		o.log.Error(msg, "oai-pmh", o.shown, "err", o.clean(err.Error()),
			"pages", st.Pages, "written", st.Written, "deleted", st.Deleted)
		return st, err
	}
	args := []any{"oai-pmh", o.shown, "pages", st.Pages, "written", st.Written, "unchanged", st.Unchanged,
		"deleted", st.Deleted, "malformed", st.Malformed, "collided", st.Collided, "full", st.Full, "records/s", int(recordsPerSecond(st)),
		"took", st.Duration.Round(time.Millisecond)}
	if st.RemoveRefused > 0 {
		args = append(args, "remove-refused", st.RemoveRefused)
	}
	if st.Missed > 0 {
		// The harvester has logged "the repository's from missed N
		// changes" as a warning.
		args = append(args, "missed", st.Missed)
	}
	o.log.Info("harvested", args...)
	return st, perr
}

// run harvests now and every interval until ctx is done; rescan, if
// positive, is the interval of full rescans of DIR, run between harvests.
func (o *oaiSource) run(ctx context.Context, src *source.Source, interval, rescan time.Duration) {
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
	if !o.first {
		o.harvest(ctx, src)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			o.harvest(ctx, src)
		case <-rtick:
			if _, err := src.Update(ctx); err != nil && ctx.Err() == nil {
				o.log.Error("rescan failed", "err", err)
			}
		}
	}
}

// clean is s (an error of the harvest) as the status page and the log
// show it: the endpoint without its user information, and no secret
// (internal/redact) such as an API key in the endpoint's query.
func (o *oaiSource) clean(s string) string {
	s = strings.ReplaceAll(s, o.endpoint, o.shown)
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

func recordsPerSecond(st harvest.Stats) float64 {
	if st.Duration <= 0 {
		return 0
	}
	return float64(st.Written+st.Unchanged+st.Deleted+st.Malformed) / st.Duration.Seconds()
}

// section is the status page's view of the harvester.
func (o *oaiSource) section() status.Section {
	st := o.h.Status()
	sec := status.Section{ID: "oai-pmh", Title: "OAI-PMH repository"}
	fact := func(name, value, figure string) {
		sec.Facts = append(sec.Facts, status.Fact{Name: name, Value: value, Figure: figure})
	}
	fact("Repository", o.shown, "oai-endpoint")
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
		fact("Records per second", fmt.Sprintf("%.0f", recordsPerSecond(s)), "oai-rate")
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
		e := o.clean(st.LastError)
		sec.Problem = "The last harvest failed: " + e + ". The last state stays published; the next harvest resumes from the last committed page."
		fact("Last error", e, "oai-error")
	}
	return sec
}

// unavailableFor answers every request on ln with 503 Service Unavailable
// and Retry-After while the first harvest runs (which may take an hour on
// a large repository): without it, connections were accepted by the
// kernel and then hung until the harvest ended, and a Destination saw
// timeouts instead of a reason to come back later. The returned function
// stops answering and leaves ln open for the Source's server.
func (o *oaiSource) unavailableFor(ln net.Listener) (stop func()) {
	dl, ok := ln.(interface{ SetDeadline(time.Time) error })
	if !ok {
		return func() {}
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "60")
			w.Header().Set("Cache-Control", "no-store")
			http.Error(w, fmt.Sprintf("The first harvest of the OAI-PMH repository %s is running (%d records so far); the Source is served once it ends.",
				o.shown, o.h.Status().Records), http.StatusServiceUnavailable)
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
