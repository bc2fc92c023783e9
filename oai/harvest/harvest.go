package harvest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	bbolt "go.etcd.io/bbolt"

	"github.com/resourcesync-go/resourcesync/httperr"
	"github.com/resourcesync-go/resourcesync/internal/boltdb"
	"github.com/resourcesync-go/resourcesync/internal/casefold"
	"github.com/resourcesync-go/resourcesync/internal/origin"
	"github.com/resourcesync-go/resourcesync/internal/redact"
	"github.com/resourcesync-go/resourcesync/internal/retry"
	"github.com/resourcesync-go/resourcesync/internal/units"
	"github.com/resourcesync-go/resourcesync/internal/watchdog"
	"github.com/resourcesync-go/resourcesync/oai"
)

// Config says which repository to harvest and where to keep its records.
type Config struct {
	// Endpoint is the repository's base URL (without ?verb=).
	Endpoint string
	// Prefixes are the metadata prefixes harvested; none means oai_dc.
	Prefixes []string
	// Sets are the set specs harvested; none means the whole repository.
	Sets []string
	// Dir holds the record files (RecordPath under it). The Source
	// publishes it; nothing else should write there.
	Dir string
	// State is the directory of the harvest state (created if missing);
	// it must not be inside Dir.
	State string
	// Client makes the requests; nil means a default client.
	Client *http.Client
	// FullEvery is the interval of the full pass, which lists every
	// record of the prefixes and sets again (ListRecords without from)
	// after the incremental lists of the same harvest: it finds what a
	// repository's from hides (a provider answering from=D as if it were
	// a month later says noRecordsMatch while records change), the
	// deletions a repository with deletedRecord=no does not report, and
	// the records that left a harvested set. Each record's canonical
	// bytes are compared with its file's, so only real changes are
	// written and journaled. 0 means 24h; negative: no full pass.
	FullEvery time.Duration
	// MaxRecords bounds the record files in Dir (all prefixes): a page
	// that would create more is not written and the harvest fails with
	// ErrTooManyRecords, so that a repository listing endless distinct
	// records cannot fill the disk. 0 means DefaultMaxRecords; negative:
	// no bound.
	MaxRecords int64
	// MinFree is the space the harvest leaves free on Dir's file system:
	// a page whose staged files leave less is not written (they are
	// removed) and the harvest fails with ErrLowDiskSpace, so that a
	// repository's records never fill the disk. 0 means DefaultMinFree;
	// negative: no floor. Not checked where the free space cannot be
	// known (other than Linux, macOS, FreeBSD and Windows).
	MinFree int64
	// FullMaxRemove bounds, in percent of the record files, what one
	// full pass removes as no longer listed: a pass that would remove
	// more (and more than 10 files) removes none and warns, since a
	// listing cut short (a resumptionToken lost by a proxy, noRecordsMatch
	// answered to a token while the repository rebuilds its index) looks
	// exactly like mass deletions, and would empty every mirror. 0 means
	// DefaultFullMaxRemove; 100 or negative: no bound.
	FullMaxRemove int
	// Log receives warnings (malformed records, retries); nil discards.
	Log *slog.Logger
	// Committed is called after each batch of pages' files are written
	// and durable, with the slash-separated paths (relative to Dir)
	// written or removed, each once; the harvest state, which moved past
	// the batch with the paths saved in it, forgets them when the next
	// batch is saved. serve passes them to source.Source.ScanPaths, so
	// the journal records a batch at once. An error stops the harvest;
	// the next Harvest reports the batch's paths again before going on.
	// It is not called for batches that changed nothing, and after a
	// kill -9 the last batch's paths may be reported a second time.
	Committed func(ctx context.Context, paths []string) error
	// FoldsCase tells whether Dir's file system takes names that differ
	// only in case for one file; nil probes Dir once, in New (macOS and
	// Windows by default, FAT, ext4 casefold directories fold). Where it
	// folds, a record whose file name differs only in case from another
	// record's (identifiers that differ only in case, in one bucket) is
	// refused: Stats.Collided, a warning naming both. For tests of that
	// on file systems that do not fold.
	FoldsCase func(dir string) (bool, error)
}

// Stats counts what one Harvest did.
type Stats struct {
	Pages     int // responses read
	Written   int // record files created or changed
	Unchanged int // records whose file already had their bytes
	Deleted   int // record files removed
	Malformed int // records skipped with a warning
	Collided  int // records refused: their file would be another's (Config.FoldsCase)
	// RemoveRefused counts the record files a full pass did not list
	// and did not remove: more than Config.FullMaxRemove allows.
	RemoveRefused int
	// Missed counts the changes a full pass found that the incremental
	// lists had not listed (records new, changed or, in a repository
	// that reports deletions, deleted, stamped before the harvest
	// started): "the repository's from missed N changes". Set on the
	// harvest that completes a full pass.
	Missed   int
	Full     bool          // this harvest listed everything (first harvest or full pass)
	Duration time.Duration // wall time
}

// Status is what the serve status page shows of the harvester.
type Status struct {
	Endpoint    string
	Granularity string    // from Identify
	LastStart   time.Time // start of the last completed harvest
	LastEnd     time.Time
	LastStats   Stats
	Records     int64  // record files in Dir
	LastError   string // of the last failed harvest, "" after a success
	Running     bool
	LastFull    time.Time // start of the last completed full listing (first harvest or full pass)
	FullMissed  int       // Stats.Missed of that listing
}

// Harvester harvests one repository into Config.Dir. Its methods are safe
// for concurrent use; Harvest calls are serialised.
type Harvester struct {
	cfg    Config
	log    *slog.Logger
	client *http.Client
	policy retry.Policy
	db     *bbolt.DB
	// stallTimeout fails a response that sends nothing for this long.
	stallTimeout time.Duration

	run sync.Mutex // serialises Harvest

	mu      sync.Mutex // guards status and records
	status  Status
	records int64
	fold    casefold.Folding // how Dir's file system compares names
}

// retryPolicy is generous: a repository under load answers 503 with
// Retry-After for minutes, and a harvest is worth waiting for.
var retryPolicy = retry.Policy{Retries: 8, BaseDelay: 500 * time.Millisecond, MaxDelay: time.Minute, MaxRetryAfter: 10 * time.Minute}

// DefaultMaxRecords is Config.MaxRecords when unset: the largest real
// repositories hold a few million records (arXiv about 2.6 million, PubMed
// Central's about 7 million), times a few metadata prefixes at most.
const DefaultMaxRecords = 20_000_000

// ErrTooManyRecords is the error of a harvest stopped by
// Config.MaxRecords.
var ErrTooManyRecords = errors.New("more records than the bound")

// DefaultFullMaxRemove is Config.FullMaxRemove when unset: as sync's
// default --max-delete, at most half.
const DefaultFullMaxRemove = 50

// DefaultMinFree is Config.MinFree when unset.
const DefaultMinFree = 1 << 30

// ErrLowDiskSpace is the error of a harvest stopped by Config.MinFree.
var ErrLowDiskSpace = errors.New("too little disk space left")

// stallTimeout is how long a response may send nothing (before its
// headers or within its body): a repository building a large page may
// think a while, but not for minutes.
const stallTimeout = 2 * time.Minute

// New checks cfg and opens the harvest state.
func New(cfg Config) (*Harvester, error) {
	if cfg.Endpoint == "" {
		return nil, errors.New("oai-pmh harvest: no endpoint")
	}
	u, err := url.Parse(cfg.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, redact.Error(fmt.Errorf("oai-pmh harvest: endpoint %q is not an http(s) URL", cfg.Endpoint))
	}
	if cfg.Dir == "" || cfg.State == "" {
		return nil, errors.New("oai-pmh harvest: Dir and State are required")
	}
	dir, err1 := filepath.Abs(cfg.Dir)
	state, err2 := filepath.Abs(cfg.State)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("oai-pmh harvest: %w", err)
	}
	if rel, err := filepath.Rel(dir, state); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("oai-pmh harvest: the state directory %s is inside the record directory %s", state, dir)
	}
	cfg.Dir, cfg.State = dir, state
	if len(cfg.Prefixes) == 0 {
		cfg.Prefixes = []string{oai.DCPrefix}
	}
	for _, p := range cfg.Prefixes {
		if p == "" || strings.ContainsAny(p, "/\\") {
			return nil, fmt.Errorf("oai-pmh harvest: bad metadata prefix %q", p)
		}
	}
	if cfg.FullEvery == 0 {
		cfg.FullEvery = 24 * time.Hour
	}
	if cfg.MaxRecords == 0 {
		cfg.MaxRecords = DefaultMaxRecords
	}
	if cfg.FullMaxRemove == 0 {
		cfg.FullMaxRemove = DefaultFullMaxRemove
	}
	if cfg.MinFree == 0 {
		cfg.MinFree = DefaultMinFree
	}
	h := &Harvester{cfg: cfg, log: cfg.Log, client: cfg.Client, policy: retryPolicy, stallTimeout: stallTimeout}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = 2 * time.Minute
		// A whole page must arrive within the timeout; repositories
		// that build pages slowly still answer in well under this.
		h.client = &http.Client{Transport: tr, Timeout: 10 * time.Minute}
	}
	// Redirects stay on the endpoint's host (any scheme or port: http
	// to https is common): a repository must not send the harvester to
	// another host, an internal address say.
	pol, err := origin.New(cfg.Endpoint, []string{u.Hostname()})
	if err != nil {
		return nil, fmt.Errorf("oai-pmh harvest: %w", err)
	}
	h.client = pol.Client(h.client)
	for _, d := range []string{dir, state} {
		if err := os.MkdirAll(d, 0o777); err != nil {
			return nil, fmt.Errorf("oai-pmh harvest: %w", err)
		}
	}
	if cfg.FoldsCase != nil {
		h.fold.Case, err = cfg.FoldsCase(dir)
	} else {
		h.fold, err = casefold.Probe(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("oai-pmh harvest: finding how %s's file system compares names: %w", dir, err)
	}
	h.db, err = openState(filepath.Join(state, "harvest.db"))
	if err != nil {
		return nil, fmt.Errorf("oai-pmh harvest: state: %w", err)
	}
	var l last
	if err := boltdb.Run(h.db, false, func(tx *bbolt.Tx) error { _, err := getJSON(tx, kLast, &l); return err }); err != nil {
		h.db.Close()
		return nil, fmt.Errorf("oai-pmh harvest: state: %w", err)
	}
	h.status = Status{Endpoint: cfg.Endpoint, Granularity: l.Granularity, LastStart: l.Start, LastEnd: l.End, LastStats: l.Stats,
		LastFull: l.FullAt, FullMissed: l.FullMissed}
	n, err := tidy(dir, cfg.Prefixes)
	if err != nil {
		h.db.Close()
		return nil, fmt.Errorf("oai-pmh harvest: %w", err)
	}
	h.records = n
	return h, nil
}

// tidy counts the record files of the prefixes and removes the
// temporary files a harvest killed in the middle of a page left behind.
func tidy(dir string, prefixes []string) (int64, error) {
	var n int64
	for _, p := range prefixes {
		root := filepath.Join(dir, escapeName(p, runtime.GOOS == "windows"))
		err := filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return nil
			case err != nil:
				return err
			case d.IsDir():
				return nil
			case strings.HasPrefix(d.Name(), tmpPrefix):
				return os.Remove(abs)
			}
			if rel, err := filepath.Rel(dir, abs); err == nil {
				if _, _, ok := ParseRecordPath(filepath.ToSlash(rel)); ok {
					n++
				}
			}
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}

// walkRecords calls fn with the slash path (relative to dir) and the
// absolute path of each record file of the prefixes.
func walkRecords(dir string, prefixes []string, fn func(rel, abs string) error) error {
	for _, p := range prefixes {
		root := filepath.Join(dir, escapeName(p, runtime.GOOS == "windows"))
		err := filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() || !d.Type().IsRegular() {
				return nil
			}
			rel, err := filepath.Rel(dir, abs)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if _, _, ok := ParseRecordPath(rel); !ok {
				return nil
			}
			return fn(rel, abs)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Harvest runs one harvest: everything the first time (and on a full
// pass), the changes since the last completed harvest otherwise. A harvest
// interrupted (error, cancellation, kill -9) resumes from its last
// committed page.
func (h *Harvester) Harvest(ctx context.Context) (Stats, error) {
	h.run.Lock()
	defer h.run.Unlock()
	h.mu.Lock()
	h.status.Running = true
	h.mu.Unlock()
	t0 := time.Now()
	var st Stats
	l, err := h.harvest(ctx, &st)
	st.Duration = time.Since(t0)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.status.Running = false
	if err != nil {
		// No credential of the endpoint's URL in a message a program logs.
		err = redact.Error(err)
		h.status.LastError = err.Error()
		return st, err
	}
	h.status.LastError = ""
	h.status.LastStart, h.status.LastEnd, h.status.LastStats = l.Start, l.End, st
	h.status.LastFull, h.status.FullMissed = l.FullAt, l.FullMissed
	return st, nil
}

// Status reports the last harvest.
func (h *Harvester) Status() Status {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.status
	s.Records = h.records
	return s
}

// Close releases the harvest state.
func (h *Harvester) Close() error {
	return h.db.Close()
}

// identity is what Identify said.
type identity struct {
	now           time.Time // responseDate (local time if absent)
	granularity   oai.Granularity
	deletedRecord string
}

func (h *Harvester) identify(ctx context.Context) (identity, error) {
	var id identity
	r, err := h.request(ctx, url.Values{"verb": {oai.Identify}}, func(*item) error { return nil }, nil)
	if err != nil {
		return id, fmt.Errorf("Identify: %w", err)
	}
	if r.Err != nil {
		return id, fmt.Errorf("Identify: %w", r.Err)
	}
	id.granularity, err = oai.ParseGranularity(r.Granularity)
	if err != nil {
		// Day is the safe guess: its overlap is the larger.
		h.log.Warn("oai-pmh: Identify names no known granularity; assuming days", "endpoint", h.cfg.Endpoint, "granularity", r.Granularity)
		id.granularity = oai.Day
	}
	id.deletedRecord = r.DeletedRecord
	h.log.Debug("oai-pmh: Identify", "endpoint", h.cfg.Endpoint, "granularity", r.Granularity, "deletedRecord", r.DeletedRecord, "earliestDatestamp", r.Earliest, "responseDate", r.ResponseDate)
	id.now = time.Now().UTC()
	if t, _, err := oai.ParseDatestamp(r.ResponseDate); err == nil && t.Before(id.now) {
		// The repository's clock, which stamps its records, not ours;
		// but never ahead of ours: a clock far ahead (a responseDate
		// in 2100) would move the next from past every change made
		// meanwhile. An earlier from only lists more again.
		id.now = t
	}
	h.mu.Lock()
	h.status.Granularity = id.granularity.String()
	h.mu.Unlock()
	return id, nil
}

func (h *Harvester) harvest(ctx context.Context, st *Stats) (last, error) {
	var prev last
	var r run
	var running bool
	err := boltdb.Run(h.db, false, func(tx *bbolt.Tx) error {
		if _, err := getJSON(tx, kLast, &prev); err != nil {
			return err
		}
		var err error
		running, err = getJSON(tx, kRun, &r)
		return err
	})
	if err != nil {
		return prev, fmt.Errorf("oai-pmh harvest: state: %w", err)
	}
	id, err := h.identify(ctx)
	if err != nil {
		return prev, fmt.Errorf("oai-pmh harvest %s: %w", h.cfg.Endpoint, err)
	}
	if !running {
		r = run{Start: id.now, Full: prev.Start.IsZero()}
		from := ""
		if !r.Full {
			// One granule of overlap: a record stamped in the granule
			// the last harvest started in may have changed after it
			// looked.
			from = id.granularity.Format(prev.Start.Add(-id.granularity.Unit()))
		}
		sets := h.cfg.Sets
		if len(sets) == 0 {
			sets = []string{""}
		}
		for _, p := range h.cfg.Prefixes {
			for _, s := range sets {
				r.Lists = append(r.Lists, list{Verb: oai.ListRecords, Prefix: p, Set: s, From: from})
			}
		}
		// The full pass lists records, not identifiers: only their
		// bytes show a change the repository's from hid (a datestamp
		// compared with the file's would miss a second change within a
		// day-granular datestamp, and content changed without a new
		// datestamp). It costs the transfer of the first harvest, but
		// writes only what changed. It follows the incremental lists,
		// so that what it changes is exactly what they missed.
		if !r.Full && h.cfg.FullEvery > 0 && id.now.Sub(prev.FullAt) >= h.cfg.FullEvery {
			r.Pass = true
			for _, p := range h.cfg.Prefixes {
				for _, s := range sets {
					r.Lists = append(r.Lists, list{Verb: oai.ListRecords, Prefix: p, Set: s, Pass: true})
				}
			}
		}
		if id.deletedRecord == "no" && h.cfg.FullEvery < 0 && !r.Full {
			h.log.Warn("oai-pmh: the repository keeps no deleted records and the full pass is off: its deletions are never found", "endpoint", h.cfg.Endpoint)
		}
		err := boltdb.Run(h.db, true, func(tx *bbolt.Tx) error {
			if err := tx.DeleteBucket(bSeen); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(bSeen); err != nil {
				return err
			}
			return putJSON(tx, kRun, &r)
		})
		if err != nil {
			return prev, fmt.Errorf("oai-pmh harvest: state: %w", err)
		}
	} else {
		h.log.Info("oai-pmh: resuming the interrupted harvest", "endpoint", h.cfg.Endpoint, "start", r.Start)
	}
	st.Full = r.Full || r.Pass
	if err := h.commitPending(ctx, &r); err != nil {
		return prev, fmt.Errorf("oai-pmh harvest %s: %w", h.cfg.Endpoint, err)
	}
	for i := range r.Lists {
		if r.Lists[i].Done {
			continue
		}
		if err := h.list(ctx, &r, i, st); err != nil {
			if r.Pending == nil {
				// The last page reached the journal: do not report it
				// again on resumption (best effort; a second report is
				// harmless).
				h.saveRun(&r, nil)
			}
			l := r.Lists[i]
			what := l.Verb + " " + l.Prefix
			if l.Set != "" {
				what += " set " + l.Set
			}
			return prev, fmt.Errorf("oai-pmh harvest %s: %s: %w", h.cfg.Endpoint, what, err)
		}
	}
	if r.Pass {
		if err := h.removeUnseen(ctx, &r, st); err != nil {
			return prev, fmt.Errorf("oai-pmh harvest %s: full pass: %w", h.cfg.Endpoint, err)
		}
		st.Missed = r.Missed
		if r.Missed > 0 {
			h.log.Warn(fmt.Sprintf("oai-pmh: the repository's from missed %d changes: the full pass found them, its incremental harvests had not listed them", r.Missed),
				"endpoint", h.cfg.Endpoint, "missed", r.Missed)
		}
	}
	next := last{Start: r.Start, End: time.Now().UTC(), FullAt: prev.FullAt, FullMissed: prev.FullMissed, Stats: *st, Granularity: id.granularity.String()}
	if r.Full || r.Pass {
		next.FullAt, next.FullMissed = r.Start, r.Missed
	}
	err = boltdb.Run(h.db, true, func(tx *bbolt.Tx) error {
		if err := tx.Bucket(bState).Delete(kRun); err != nil {
			return err
		}
		if err := tx.DeleteBucket(bSeen); err != nil {
			return err
		}
		if _, err := tx.CreateBucket(bSeen); err != nil {
			return err
		}
		return putJSON(tx, kLast, &next)
	})
	if err != nil {
		return prev, fmt.Errorf("oai-pmh harvest: state: %w", err)
	}
	return next, nil
}

// maxEmptyPages is how many pages without records (but with a
// resumption token) a list may send in a row.
const maxEmptyPages = 100

// page is one response read and its files staged.
type page struct {
	resp *response
	ps   Stats
	seen [][]byte // ListIdentifiers: the record paths listed
	w    *pageWriter
	err  error
}

// fetch asks for one page of list l (its first when token is "") and
// stages its files. pending says which paths earlier pages not yet
// renamed into place change (pageWriter.pending).
func (h *Harvester) fetch(ctx context.Context, l *list, start time.Time, token string, pending func(string) bool) *page {
	verb, prefix, set, from := l.Verb, l.Prefix, l.Set, l.From
	q := url.Values{"verb": {verb}}
	if token != "" {
		q.Set("resumptionToken", token)
	} else {
		q.Set("metadataPrefix", prefix)
		if set != "" {
			q.Set("set", set)
		}
		if from != "" {
			q.Set("from", from)
		}
	}
	p := &page{w: newPageWriter(h.cfg.Dir, h.fold, h.collided, pending)}
	onItem := func(it *item) error {
		return h.item(ctx, p.w, l, start, it, &p.ps, &p.seen)
	}
	p.resp, p.err = h.request(ctx, q, onItem, func() { p.w.abort(); p.ps = Stats{}; p.seen = p.seen[:0] })
	if p.err == nil && p.resp.Err == nil && p.resp.Verb != verb {
		p.err = fmt.Errorf("%w: answer <%s> to %s", errResponse, p.resp.Verb, verb)
	}
	if p.err == nil && p.resp.Err == nil {
		p.ps.Written, p.ps.Unchanged, p.err = p.w.wait()
		p.ps.Missed = p.w.missed()
	}
	if p.err != nil || p.resp.Err != nil {
		p.w.abort()
	}
	return p
}

// list harvests one list of the run from where it stopped, in batches of
// pages (batchLimits): a batch's files are made durable together, renamed
// into place, reported to Committed and the list's state moved past its
// last page in one transaction, so that a few syncfs and one state commit
// serve thousands of records. The next batch's pages are read and staged
// while the last batch is committed, so that the repository, the parser
// and the disk work at once.
func (h *Harvester) list(ctx context.Context, r *run, i int, st *Stats) (err error) {
	l := &r.Lists[i]
	t0, n0, restarts := time.Now(), 0, 0
	// A repository whose tokens go round in a cycle, or that sends page
	// after page of nothing, would be asked forever: the tokens of this
	// listing (hashed: bounded memory per page) and the run of empty
	// pages stop it.
	tokens, empty := map[[32]byte]bool{}, 0
	// tok is the token of the next page to ask for, pages how many were
	// read: ahead of l's, which move only when a batch is committed. The
	// batch being committed (in a goroutine) alone touches r, l and st
	// until waitCommit.
	tok, pages := l.Token, l.Pages
	b := &batch{}
	var committing *batch
	var inflight chan error
	waitCommit := func() error {
		if inflight == nil {
			return nil
		}
		err := <-inflight
		inflight, committing = nil, nil
		return err
	}
	defer func() {
		if cerr := waitCommit(); cerr != nil && err == nil {
			err = cerr
		}
		if err != nil {
			b.abort()
		}
	}()
	for {
		cur := h.fetch(ctx, l, r.Start, tok, b.pending(committing))
		if cur.err != nil {
			return cur.err
		}
		resp := cur.resp
		if resp.Err != nil {
			switch {
			case resp.Err.Code == oai.NoRecordsMatch:
				// The list ends here (a first page with nothing, or a
				// repository rebuilding its index): what the batch
				// holds is committed first.
				if err := waitCommit(); err != nil {
					return err
				}
				if err := h.commitBatch(ctx, r, l, b, st); err != nil {
					return err
				}
				l.Done = true
				return h.saveRun(r, nil)
			case resp.Err.Code == oai.BadResumptionToken && tok != "":
				// The token expired (or the repository restarted):
				// list again from the start; the pages already
				// committed come back unchanged and write nothing, and
				// those of the batch (not committed) are staged again.
				if err := waitCommit(); err != nil {
					return err
				}
				b.abort()
				h.log.Warn("oai-pmh: resumption token refused; listing again from the start",
					"endpoint", h.cfg.Endpoint, "verb", l.Verb, "prefix", l.Prefix, "set", l.Set, "from", l.From, "pages", l.Pages, "error", resp.Err.Message)
				if restarts++; restarts > 5 {
					return fmt.Errorf("resumption tokens keep expiring (%d restarts): %w", restarts-1, resp.Err)
				}
				l.Token, tok, pages = "", "", l.Pages
				clear(tokens)
				empty = 0
				if err := h.saveRun(r, nil); err != nil {
					return err
				}
				continue
			}
			return retry.Permanent(resp.Err)
		}
		if resp.Token != "" && resp.Token == tok {
			cur.w.abort()
			return fmt.Errorf("%w: the repository answered resumption token %q with itself", errResponse, tok)
		}
		if resp.Token != "" {
			k := sha256.Sum256([]byte(resp.Token))
			if tokens[k] {
				cur.w.abort()
				return fmt.Errorf("%w: resumption token %.200q came back: the list is a cycle", errResponse, resp.Token)
			}
			tokens[k] = true
			if empty++; resp.Items > 0 {
				empty = 0
			}
			if empty > maxEmptyPages {
				cur.w.abort()
				return fmt.Errorf("%w: %d pages in a row without records, each with a new resumption token", errResponse, empty)
			}
		}
		b.add(cur)
		tok = resp.Token
		pages++
		n0 += resp.Items
		args := []any{"endpoint", h.cfg.Endpoint, "verb", l.Verb, "prefix", l.Prefix, "set", l.Set, "page", pages, "items", resp.Items}
		if resp.CompleteListSize >= 0 {
			args = append(args, "completeListSize", resp.CompleteListSize)
		}
		if resp.Cursor >= 0 {
			args = append(args, "cursor", resp.Cursor)
		}
		if resp.Expiration != "" {
			args = append(args, "tokenExpires", resp.Expiration)
		}
		if d := time.Since(t0); d > 0 {
			args = append(args, "perSecond", int(float64(n0)/d.Seconds()))
		}
		if tok == "" || pages%50 == 1 {
			h.log.Info("oai-pmh: page", args...)
		} else {
			h.log.Debug("oai-pmh: page", args...)
		}
		over := h.overBound(b)
		if tok != "" && !b.full() && !over {
			continue
		}
		if err := waitCommit(); err != nil {
			return err
		}
		cb := b
		b = &batch{}
		if tok == "" || over {
			// The last batch; or one crossing MaxRecords, which stops
			// the harvest: no page is read past it.
			if err := h.commitBatch(ctx, r, l, cb, st); err != nil || tok == "" {
				return err
			}
			continue
		}
		committing, inflight = cb, make(chan error, 1)
		go func() { inflight <- h.commitBatch(ctx, r, l, cb, st) }()
	}
}

// overBound reports whether the records the batch creates would cross
// Config.MaxRecords: it is committed at once (the pages under the bound),
// and the harvest stops, rather than reading on.
func (h *Harvester) overBound(b *batch) bool {
	max := h.cfg.MaxRecords
	if max <= 0 || b.creations == 0 {
		return false
	}
	h.mu.Lock()
	n := h.records
	h.mu.Unlock()
	return n+int64(b.creations) > max
}

// commitBatch makes a batch of staged pages durable and visible, reports
// their paths to Committed and moves the list's state past the last page,
// in one state transaction.
func (h *Harvester) commitBatch(ctx context.Context, r *run, l *list, b *batch, st *Stats) error {
	if len(b.pages) == 0 {
		return nil
	}
	// Write ahead: the paths about to change are in the state before the
	// first rename. Killed between the renames and the state's move past
	// the batch, the harvester lists its pages again after a restart,
	// finds those files unchanged and would report nothing: the journal
	// would never learn of them. Reported from the state instead (a path
	// whose rename did not happen is reread and found unchanged:
	// harmless).
	if max := h.cfg.MaxRecords; max > 0 {
		h.mu.Lock()
		n := h.records
		h.mu.Unlock()
		// The pages under the bound are committed; the harvest stops
		// before the first page that would cross it.
		c, k := 0, 0
		for _, p := range b.pages {
			if n+int64(c+p.w.creations()) > max {
				break
			}
			c += p.w.creations()
			k++
		}
		if k < len(b.pages) {
			c = b.pages[k].w.creations()
			for _, q := range b.pages[k:] {
				q.w.abort()
			}
			b.pages = b.pages[:k]
			err := fmt.Errorf("%w: the repository lists more than %d records (%d record files, %d more in the next page): the harvest stops before writing them, as a repository listing endless records would fill the disk", ErrTooManyRecords, max, n, c)
			if k == 0 {
				return err
			}
			if cerr := h.commitBatch(ctx, r, l, b, st); cerr != nil {
				return errors.Join(err, cerr)
			}
			return err
		}
	}
	written := 0
	for _, p := range b.pages {
		written += p.ps.Written
	}
	if floor := h.cfg.MinFree; floor > 0 && written > 0 {
		// Measured with the batch's files staged: what is left after it.
		if free, ok, err := freeBytes(h.cfg.Dir); err == nil && ok && free < floor {
			b.abort()
			return fmt.Errorf("%w: %s free on the file system of %s with %d files staged, less than the %s to keep free: the harvest stops before writing them", ErrLowDiskSpace, units.Bytes(free), h.cfg.Dir, written, units.Bytes(floor))
		}
	}
	changes := 0
	for _, p := range b.pages {
		changes += p.w.changes()
	}
	if changes > 0 && h.cfg.Committed != nil {
		r.Pending = b.planned()
		if err := h.saveRun(r, nil); err != nil {
			b.abort()
			return err
		}
	}
	out := renamed{dirs: map[string]bool{}}
	if changes > 0 {
		// The new contents reach the disk before any rename does.
		if err := syncData(h.cfg.Dir); err != nil {
			b.abort()
			return err
		}
		var touched [stagers]map[string]bool
		for i := range touched {
			touched[i] = map[string]bool{}
		}
		for k, p := range b.pages {
			if err := p.w.rename(&touched, &out); err != nil {
				for _, q := range b.pages[k+1:] {
					q.w.abort()
				}
				if len(out.paths) > 0 {
					// Some renames happened: they must reach the journal.
					r.Pending = dedupe(out.paths)
					if serr := h.saveRun(r, nil); serr != nil {
						return errors.Join(err, serr)
					}
				}
				return err
			}
		}
	}
	if testAfterRenames != nil {
		testAfterRenames()
	}
	if changes > 0 {
		if err := syncDirs(h.cfg.Dir, out.dirs); err != nil {
			r.Pending = dedupe(out.paths)
			if serr := h.saveRun(r, nil); serr != nil {
				return errors.Join(err, serr)
			}
			return err
		}
	}
	var seen [][]byte
	for _, p := range b.pages {
		st.Pages++
		st.Written += p.ps.Written
		st.Unchanged += p.ps.Unchanged
		st.Malformed += p.ps.Malformed
		st.Collided += int(p.w.collided.Load())
		st.Written -= int(p.w.unstaged.Load())
		if l.Pass || l.Verb == oai.ListIdentifiers {
			r.Missed += p.ps.Missed
			r.Listed += int64(p.resp.Items)
		}
		seen = append(seen, p.seen...)
	}
	st.Deleted += out.removed
	h.mu.Lock()
	h.records += int64(out.created - out.removed)
	h.mu.Unlock()
	last := b.pages[len(b.pages)-1]
	l.Token = last.resp.Token
	l.Pages += len(b.pages)
	l.Done = last.resp.Token == ""
	r.Pending = dedupe(out.paths)
	b.pages = nil
	if err := h.saveRun(r, seen); err != nil {
		return err
	}
	if testAfterSave != nil {
		testAfterSave()
	}
	return h.commitPending(ctx, r)
}

// collided warns of a record refused because its file, rel, would be
// other's (both relative to Dir), whose name differs only in case.
func (h *Harvester) collided(rel, other string) {
	id, prefix, _ := ParseRecordPath(rel)
	oid, _, ok := ParseRecordPath(other)
	if !ok {
		oid = "(not a record: " + other + ")"
	}
	h.log.Warn("oai-pmh: skipping a record whose identifier and another's differ only in case, which the file system of the record directory ignores: the first keeps the file",
		"endpoint", h.cfg.Endpoint, "identifier", short(id), "other", short(oid), "prefix", prefix, "file", other)
}

// testAfterRenames, set by a test, runs after a batch's renames and
// before the state moves past it: the window a kill -9 must survive;
// testAfterSave after the state moved, before Committed.
var testAfterRenames, testAfterSave func()

// commitPending reports the paths of the last page saved to Committed.
// They stay in the state until the next page replaces them (a second
// report after a restart is harmless: the Source rereads the files).
func (h *Harvester) commitPending(ctx context.Context, r *run) error {
	if len(r.Pending) == 0 || h.cfg.Committed == nil {
		return nil
	}
	if err := h.cfg.Committed(ctx, r.Pending); err != nil {
		return fmt.Errorf("committing a page: %w", err)
	}
	r.Pending = nil
	return nil
}

func (h *Harvester) saveRun(r *run, seen [][]byte) error {
	return boltdb.Run(h.db, true, func(tx *bbolt.Tx) error {
		b := tx.Bucket(bSeen)
		for _, k := range seen {
			if err := b.Put(k, []byte{1}); err != nil {
				return err
			}
		}
		return putJSON(tx, kRun, r)
	})
}

// item stages one record (or notes one identifier of an old full
// ListIdentifiers pass) of list l, in a harvest that started at start.
func (h *Harvester) item(ctx context.Context, w *pageWriter, l *list, start time.Time, it *item, ps *Stats, seen *[][]byte) error {
	verb, prefix := l.Verb, l.Prefix
	// A full pass notes what it lists: the files of records it did not
	// list are removed when it completes.
	pass := l.Pass || verb == oai.ListIdentifiers
	if it.Bad != nil {
		if rel := RecordPath(it.Identifier, prefix); pass && it.Identifier != "" && fitsName(rel) && !it.Deleted {
			// Listed, if badly: its record is not to be removed.
			*seen = append(*seen, []byte(rel))
		}
		ps.Malformed++
		id := short(it.Identifier)
		if id == "" {
			id = "(none)"
		}
		h.log.Warn("oai-pmh: skipping a malformed record", "endpoint", h.cfg.Endpoint, "identifier", id, "prefix", prefix, "datestamp", it.Datestamp, "error", it.Bad)
		return nil
	}
	rel := RecordPath(it.Identifier, prefix)
	if !fitsName(rel) {
		// No file can have this name: there is nothing to remove for
		// a deletion or to keep for a full pass, and the record
		// itself is skipped.
		if verb == oai.ListIdentifiers || it.Deleted {
			return nil
		}
		ps.Malformed++
		h.log.Warn("oai-pmh: skipping a record whose identifier is too long for a file name", "endpoint", h.cfg.Endpoint, "identifier", short(it.Identifier), "bytes", len(it.Identifier))
		return nil
	}
	if !it.Deleted && !h.inSets(it.Sets) {
		// Listed for a harvested set, its header says it is in none:
		// it left the set (or the repository ignores set=). Its file
		// goes, journaled as a deletion.
		h.log.Info("oai-pmh: record not in a harvested set; removing it", "endpoint", h.cfg.Endpoint, "identifier", short(it.Identifier), "prefix", prefix, "sets", short(strings.Join(it.Sets, " ")))
		if verb != oai.ListIdentifiers {
			w.remove(rel, false)
		}
		return nil
	}
	if verb == oai.ListIdentifiers {
		if !it.Deleted {
			*seen = append(*seen, []byte(rel))
		}
		return nil
	}
	t, _, err := oai.ParseDatestamp(it.Datestamp)
	// A change found by the pass was missed by the incremental lists
	// unless it was made after the harvest started (the next one would
	// list it).
	missed := l.Pass && (err != nil || t.Before(start))
	if it.Deleted {
		w.remove(rel, missed)
		return nil
	}
	if pass {
		*seen = append(*seen, []byte(rel))
	}
	if err != nil {
		ps.Malformed++
		h.log.Warn("oai-pmh: skipping a record with a bad datestamp", "endpoint", h.cfg.Endpoint, "identifier", short(it.Identifier), "prefix", prefix, "datestamp", short(it.Datestamp))
		return nil
	}
	w.put(rel, it.Metadata, t, missed)
	return ctx.Err()
}

// inSets reports whether a record whose header names sets is in one of
// the harvested sets (or under one: set a holds a:b). A header naming no
// set says nothing (many repositories leave setSpec out), nor does any
// header when the whole repository is harvested.
func (h *Harvester) inSets(sets []string) bool {
	if len(h.cfg.Sets) == 0 || len(sets) == 0 {
		return true
	}
	for _, s := range sets {
		for _, want := range h.cfg.Sets {
			if s == want || strings.HasPrefix(s, want+":") {
				return true
			}
		}
	}
	return false
}

// fitsName reports whether a record path can be a file's (and a key of
// the state: bbolt's are at most 32 KiB).
func fitsName(rel string) bool {
	return len(rel) <= 4096 && len(path.Base(rel)) <= 255
}

// short cuts what a repository sent to a length fit for a log line.
func short(s string) string {
	if len(s) <= 200 {
		return s
	}
	return strings.ToValidUTF8(s[:200], "") + "…"
}

// removeUnseen ends a completed full pass: the record files of
// identifiers it did not list are removed, in batches reported to
// Committed.
func (h *Harvester) removeUnseen(ctx context.Context, r *run, st *Stats) error {
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		r.Pending = batch
		if err := h.saveRun(r, nil); err != nil {
			return err
		}
		for _, rel := range batch {
			if err := os.Remove(filepath.Join(h.cfg.Dir, filepath.FromSlash(rel))); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		if err := syncfsDirs(h.cfg.Dir, batch); err != nil {
			return err
		}
		st.Deleted += len(batch)
		h.mu.Lock()
		h.records -= int64(len(batch))
		h.mu.Unlock()
		if err := h.commitPending(ctx, r); err != nil {
			return err
		}
		batch = nil
		return nil
	}
	if r.Listed == 0 {
		h.mu.Lock()
		n := h.records
		h.mu.Unlock()
		if n > 0 {
			// Every list of the pass said noRecordsMatch: a repository
			// rebuilding its index (DSpace's Solr core, say) answers
			// so for a while. Removing every record on that word
			// would empty the mirrors too.
			h.log.Warn("oai-pmh: the full pass listed no record at all; none of the record files is removed", "endpoint", h.cfg.Endpoint, "records", n)
			return nil
		}
	}
	// One short read per file: a read transaction held over the walk
	// would block flush's writes when bbolt needs to remap.
	unseen := func(rel string) (bool, error) {
		var listed bool
		err := boltdb.Run(h.db, false, func(tx *bbolt.Tx) error {
			listed = tx.Bucket(bSeen).Get([]byte(rel)) != nil
			return nil
		})
		return !listed, err
	}
	if pct := h.cfg.FullMaxRemove; pct > 0 && pct < 100 {
		// Counted first (a second walk, once per full pass): nothing is
		// removed from a listing that was cut short.
		var all, gone int64
		if err := walkRecords(h.cfg.Dir, h.cfg.Prefixes, func(rel, _ string) error {
			all++
			u, err := unseen(rel)
			if u {
				gone++
			}
			return err
		}); err != nil {
			return err
		}
		if gone > 10 && gone*100 > all*int64(pct) {
			h.log.Warn("oai-pmh: the full pass would remove more than the bound allows (a listing cut short looks the same); none of the record files is removed",
				"endpoint", h.cfg.Endpoint, "unlisted", gone, "records", all, "bound", fmt.Sprintf("%d%%", pct))
			st.RemoveRefused = int(gone)
			return nil
		}
	}
	err := walkRecords(h.cfg.Dir, h.cfg.Prefixes, func(rel, _ string) error {
		u, err := unseen(rel)
		if err != nil || !u {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		h.log.Info("oai-pmh: record no longer listed; removing it", "endpoint", h.cfg.Endpoint, "path", rel)
		batch = append(batch, rel)
		if len(batch) >= 1000 {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// syncfsDirs makes the removals of rels durable.
func syncfsDirs(dir string, rels []string) error {
	dirs := map[string]bool{}
	for _, rel := range rels {
		dirs[filepath.Dir(filepath.Join(dir, filepath.FromSlash(rel)))] = true
	}
	return syncDirs(dir, dirs)
}

// request asks the repository once per attempt, through the one retry
// loop, and parses the answer as it arrives. again, if set, is called
// before a new attempt, to undo what onItem did with the failed one.
func (h *Harvester) request(ctx context.Context, q url.Values, onItem func(*item) error, again func()) (*response, error) {
	u := h.cfg.Endpoint
	if strings.Contains(u, "?") {
		u += "&" + q.Encode()
	} else {
		u += "?" + q.Encode()
	}
	var resp *response
	_, err := retry.Do(ctx, h.policy, func() (bool, error) {
		var err error
		resp, err = h.once(ctx, u, onItem)
		if err != nil && again != nil {
			again()
		}
		return retry.Classify(err)
	}, func(n int, err error, wait time.Duration) error {
		h.log.Warn("oai-pmh: request failed; retrying", "url", redact.String(u), "retry", n, "wait", wait, "error", redact.String(retry.Strip(err).Error()))
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, retry.Strip(err)
	}
	return resp, nil
}

// once makes one request, watched for stalls: serve's client has no
// timeout, and a repository that stops sending mid-page would hold the
// harvest for ever.
func (h *Harvester) once(ctx context.Context, u string, onItem func(*item) error) (*response, error) {
	rctx, w := watchdog.Start(ctx, watchdog.Limits{Idle: h.stallTimeout})
	defer w.Stop()
	r, err := h.once1(rctx, u, onItem, w)
	if err != nil && ctx.Err() == nil {
		if werr := w.Err(); werr != nil {
			return nil, fmt.Errorf("GET %s: %w", u, werr)
		}
	}
	return r, err
}

func (h *Harvester) once1(ctx context.Context, u string, onItem func(*item) error, w *watchdog.Watch) (*response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, retry.Permanent(err)
	}
	req.Header.Set("Accept", "text/xml, application/xml")
	resp, err := h.client.Do(req)
	if errors.Is(err, origin.ErrOffOrigin) {
		var oe *origin.Error
		errors.As(err, &oe)
		return nil, retry.Permanent(fmt.Errorf("GET %s: the repository redirected to %s, on another host: use that URL as the endpoint if it is the repository's", u, oe.URL))
	}
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		se := &httperr.StatusError{URL: redact.String(u), Code: resp.StatusCode}
		return nil, retry.WithRetryAfter(se, retry.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()))
	}
	r, err := parseResponse(w.Body(resp.Body), onItem)
	switch {
	case err == nil:
		return r, nil
	case errors.Is(err, errTruncated):
		return nil, fmt.Errorf("GET %s: %w", u, err)
	case errors.Is(err, errResponse), errors.Is(err, errMalformed):
		return nil, retry.Permanent(fmt.Errorf("GET %s: %w", u, err))
	}
	// A failure of the body (network) or of writing a record file.
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, retry.Permanent(err)
	}
	return nil, fmt.Errorf("GET %s: %w", u, err)
}
