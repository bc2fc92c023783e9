package destination

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourcesync-go/resourcesync/destination/discover"
	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/internal/origin"
	"github.com/resourcesync-go/resourcesync/internal/redact"
	"github.com/resourcesync-go/resourcesync/internal/units"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/storage"
	bolt "go.etcd.io/bbolt"
)

const tempPrefix = fetch.TempPrefix

// Mode selects what a run does.
type Mode int

const (
	// ModeAuto runs a baseline when a set has none yet, else an
	// incremental sync (with a gap repaired by a baseline).
	ModeAuto Mode = iota
	// ModeBaseline forces a baseline from the current Resource List.
	ModeBaseline
	// ModeAudit compares DEST with the Source; with Options.Repair it
	// also fixes what differs.
	ModeAudit
)

// ErrDiscovery wraps every failure to find or read the Source's
// capability documents.
var ErrDiscovery = errors.New("discovery")

// Options configures Sync. Dest and Client are required.
type Options struct {
	Dest   string
	Client *http.Client
	Mode   Mode
	// Workers fetching concurrently (default 8).
	Workers int
	// RatePerHost limits requests per second to each host (0: none).
	RatePerHost float64
	// NoDelete keeps files whose resources the Source deleted.
	NoDelete bool
	// MaxDelete caps the files one run deletes in one set (baseline sweep,
	// Change List deletions, audit repair, a notification): beyond it
	// none is deleted, the set's report says so (SetReport.DeleteRefused,
	// which makes Report.OK false) and its checkpoint stays before the
	// refused deletions. Zero value: at most half of a set of more than
	// 100 files. A long-lived Mirror (sync --follow) also counts the
	// deletions it made within MaxDeleteWindow (default 1h).
	MaxDelete       DeleteLimit
	MaxDeleteWindow time.Duration
	// AllowReset lets a run delete every file of a set when the Source
	// started afresh: its Change Lists begin after the mirror's
	// checkpoint and it names none of the mirror's files (a
	// directory served again after it was emptied or unmounted, its state
	// lost with it). Without it such a run deletes nothing and its set's
	// report says so (SetReport.ResetRefused, which makes Report.OK
	// false). MaxDelete still applies.
	AllowReset bool
	// DryRun plans and reports without touching DEST or the state.
	DryRun bool
	// Repair, with ModeAudit, fixes the differences found.
	Repair bool
	// Set limits the run to the set with that name.
	Set string
	// Base overrides the Source's base URL used to map URIs to paths.
	Base string
	// NoDump makes baselines use the Resource List even when a Resource
	// Dump is offered.
	NoDump bool
	// PreferDump makes a baseline take the Resource Dump even from a
	// Source whose documents advertise our bulk GET on their own origin.
	// By default such a baseline skips the dump: the bulk GET brings the
	// same bytes, verified the same way (each against the list's length
	// and digests, as a dump member against its manifest's), without a
	// package spooled to disk and read back, and with the Source's reads
	// and DEST's writes overlapped across the workers (about 1.5x the
	// dump's rate on small files). Dumps are still taken from Sources
	// without it (a static publish, py-resync).
	PreferDump bool
	// FsyncEach fsyncs every file before its rename. By default files are
	// made durable in batches (one syncfs) before the state records them.
	FsyncEach bool
	// Events, if set, receives progress; it must be safe for concurrent use.
	Events func(Event)
	// VerifyAll verifies every digest offered besides the length. By
	// default only the strongest one is (sha-256, else sha-1, else md5):
	// md5 is the slowest step for large files, and a matching sha-256
	// already implies the bytes are right. Every token of that algorithm
	// is checked, so two that contradict each other still fail.
	VerifyAll bool
	// StallTimeout abandons and retries a download when no bytes arrive
	// for this long (0: no limit but the context).
	StallTimeout time.Duration
	// MinRate abandons and retries a download (document or resource)
	// whose body averages fewer bytes per second over a MinRateWindow
	// (default 30s); 0: no limit.
	MinRate       float64
	MinRateWindow time.Duration
	// AllowHosts are hosts (HOST or HOST:PORT) that redirects and
	// rel="duplicate" locations may lead to besides the Source's own
	// authority (scheme, host and port); others are refused with
	// fetch.ErrOffOrigin. Resources whose URIs are on them are mirrored
	// too, into DEST/_hosts/<host>[_<port>]/<path> (see HostsDirName).
	AllowHosts []string
	// Fetch tuning (zero: the fetch package's defaults).
	Retries             int
	BaseDelay, MaxDelay time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// FoldsCase tells whether DEST's file system takes names that differ
	// only in case for one file, given DEST's temporary directory; nil
	// probes it there once per Mirror (a file with a mixed-case name,
	// looked up under another case), which also finds whether it ignores
	// Unicode normalization forms (macOS). Where it folds, the second of
	// two resources whose paths would share a file is refused
	// (ErrPathCollision). For tests of that on file systems that do not
	// fold.
	FoldsCase func(dir string) (bool, error)
	// MTimeGranularity tells how coarse the mtimes DEST's file system
	// keeps are (0: nanoseconds), given DEST's temporary directory; nil
	// probes it there once per Mirror (a file's mtime set to odd seconds
	// and nanoseconds, read back). Where they are coarse (FAT 2 s, HFS+
	// 1 s, exFAT 10 ms, NTFS 100 ns), the mtime a file got from its
	// install is read back and recorded, and a file's mtime is taken for
	// the Source's lastmod within that granularity. For a DEST with
	// another file system mounted below its root, and for tests.
	MTimeGranularity func(dir string) (time.Duration, error)
	// Fence, if set, is asked before each write of the state (each
	// commit of a batch of records, the checkpoint, the run's mark) and
	// before each file is deleted; an error refuses that write and every
	// later one of the run, which ends with it. A caller sharing DEST
	// between processes under a lease (aggregate) refuses once its lease
	// is over, so that a process that paused past it stops within one
	// commit batch and records nothing after another took over. What
	// remains: the files whose downloads were under way are put in place
	// without a check (the state does not record them; their intents
	// name them, and the next run records them), and a write
	// that follows its check by more than the lease's remaining time. It
	// is called with a context that is not cancelled with the run's: a
	// cancelled run still records what it installed.
	Fence func(ctx context.Context) error
	// Target, when set, is where the mirror's files go instead of Dest (a
	// bucket, or any storage.Target), and Dest is the local directory of
	// the state only (Dest/.resourcesync). Every file is streamed into the
	// Target while it is verified and committed atomically; the Target's
	// own objects the state does not name as installed here, and those
	// changed since, are never overwritten nor deleted (a write or a
	// removal is conditional on the version that was checked). The Mirror
	// does not close it.
	Target storage.Target
	// Include, when set, says which paths under the Source the mirror
	// takes (the path relative to the Source's base, as in DEST, slash
	// separated; an allowed host's resources are under _hosts/): sync's
	// --include, --exclude and --filter-from (internal/filter). A path
	// it leaves out is never fetched nor deleted, whatever the Source
	// says of it (a file already in DEST stays), and the audit ignores
	// it; Excluded counts the entries left out. nil takes every path.
	Include func(path string) bool
	// Force replaces a file (or a Target's object) that the tool did not
	// write and that differs from the Source's, instead of refusing it
	// (ErrNotOwned): the file is first kept as NAME.resourcesync-old
	// (ForceSuffix), and a resource whose NAME.resourcesync-old exists
	// already fails as before, so that nothing is lost. Replaced counts
	// them.
	Force bool
}

// Failure is one resource that could not be synchronized.
type Failure struct {
	URI   string `json:"uri"`
	Path  string `json:"path,omitempty"`
	Error string `json:"error"`
}

// SetReport tells what a run did to one set.
type SetReport struct {
	Set     string `json:"set"`
	Mode    string `json:"mode"`
	Fetched int    `json:"fetched"`
	Adopted int    `json:"adopted"`
	Skipped int    `json:"skipped"`
	Deleted int    `json:"deleted"`
	Kept    int    `json:"kept"`
	Failed  int    `json:"failed"`
	// Excluded counts the Source's entries left out by Options.Include:
	// neither fetched nor deleted.
	Excluded int `json:"excluded,omitempty"`
	// Replaced counts files the tool did not write that Options.Force
	// replaced, each kept as NAME.resourcesync-old; they are in Fetched
	// too.
	Replaced int `json:"replaced,omitempty"`
	// Vanished counts resources that changed or went away at the Source
	// while the run read them, judged against the Source's later state
	// (EventVanished): not failures. Their newer versions are in Fetched,
	// their deletions in Deleted.
	Vanished int `json:"vanished,omitempty"`
	// DeleteRefused counts the deletions not made because they exceeded
	// Options.MaxDelete (MaxDelete, as given) in a set of DeleteRefusedOf
	// files.
	DeleteRefused   int    `json:"delete_refused,omitempty"`
	DeleteRefusedOf int    `json:"delete_refused_of,omitempty"`
	MaxDelete       string `json:"max_delete,omitempty"`
	// ResetRefused counts the deletions not made because the Source
	// started afresh (Reset says how that shows) and Options.AllowReset
	// was not given.
	ResetRefused int    `json:"reset_refused,omitempty"`
	Reset        string `json:"reset,omitempty"`
	// Unverified counts files installed on their length alone: the
	// Source's only digests were of algorithms that cannot be checked.
	Unverified int   `json:"unverified,omitempty"`
	Bytes      int64 `json:"bytes"`
	// FromDump and DumpBytes are the part of Fetched and Bytes installed
	// from Resource Dump packages (the Resource List pass then checks
	// them, and counts them as Skipped when they match).
	FromDump  int            `json:"from_dump,omitempty"`
	DumpBytes int64          `json:"dump_bytes,omitempty"`
	Audit     map[string]int `json:"audit,omitempty"`
	Gap       string         `json:"gap,omitempty"`
	Failures  []Failure      `json:"failures,omitempty"`
	// Checkpoint is the set's checkpoint after the run.
	Checkpoint Checkpoint `json:"checkpoint"`
	// SourceUntil is how far the Source's Change Lists (or the
	// notification) reached, as far as this run read them (zero: unknown).
	SourceUntil time.Time `json:"source_until,omitzero"`
	Seconds     float64   `json:"seconds"`
}

// Differences counts audit results other than in-sync and unverifiable.
func (r *SetReport) Differences() int {
	return r.Audit[AuditMissing] + r.Audit[AuditChanged] + r.Audit[AuditExtra]
}

// Report tells what a run did.
type Report struct {
	Source  string       `json:"source"`
	Base    string       `json:"base"`
	Dest    string       `json:"dest"`
	DryRun  bool         `json:"dry_run,omitempty"`
	Cleaned int          `json:"temp_files_removed,omitempty"`
	Retries int64        `json:"retries"`
	Sets    []*SetReport `json:"sets"`
	Seconds float64      `json:"seconds"`
}

// OK reports whether DEST is in sync: no failures and, for an audit
// without repair, no differences.
func (r *Report) OK(audit, repair bool) bool {
	for _, s := range r.Sets {
		if s.Failed > 0 || s.DeleteRefused > 0 || s.ResetRefused > 0 || s.Gap != "" && s.Checkpoint.Until.IsZero() {
			return false
		}
		if audit && !repair && s.Differences() > 0 {
			return false
		}
	}
	return true
}

type engine struct {
	opt Options
	st  *state
	m   *Mapper
	f   *fetch.Fetcher
	fn  *fetch.Fetcher // for notifications: one quick retry
	g   *discover.Getter
	fd  int // DEST, for syncfs; -1 when nothing is written
	// dir is where every file of the mirror is written, read and deleted:
	// DEST (no symbolic link followed) or Options.Target; nil only when
	// DEST does not exist in a read-only run.
	dir mirrorDir
	// local is DEST (with a Target, the directory of the state alone).
	local *fetch.Dir
	// tg is Options.Target, or nil.
	tg     storage.Target
	seen   *seenSet
	tmpDir string
	// scratch holds the run's scratch databases: tmpDir, or the system's
	// temporary directory when DEST must not be touched.
	scratch string

	retries atomic.Int64
	// deleted: what this Mirror deleted lately, for MaxDelete's window.
	delMu   sync.Mutex
	deleted []deletedAt
	// crashed is set when this session found that the previous one did
	// not finish: files it installed but had not recorded may be here,
	// and only then is a file the state does not name taken as ours.
	crashed bool
	// unmarkAtCheckpoint: the set being run is a Sync's last, and its
	// checkpoint's commit clears the run mark too (Mirror.unmark then
	// has nothing to write).
	unmarkAtCheckpoint bool
	// emptyTarget is set, for one Sync, when the Target listed no
	// object and the state recorded none as it began (emptyAtStart).
	emptyTarget bool
	// mtimeGrain is the granularity of the mtimes DEST's file system
	// keeps, 0 for nanoseconds (probed per Mirror: mtime.go).
	mtimeGrain time.Duration
	// docs: the Source's own documents, never installed as resources.
	docs docSet
}

func (e *engine) emit(ev Event) {
	if e.opt.Events != nil {
		if ev.Time.IsZero() {
			ev.Time = e.opt.Now()
		}
		// A Go user logging events must leak no credentials: what the
		// Source's documents or an error put there is redacted here, at
		// the library's edge (redact.String costs nothing without '@'
		// or '=').
		ev.Error, ev.Message, ev.URI = redact.String(ev.Error), redact.String(ev.Message), redact.String(ev.URI)
		e.opt.Events(ev)
	}
}

// redacted is cp as the package hands it out (report, events): the
// Capability List's URL, as the user gave it, may name a password or a
// token.
func (cp Checkpoint) redacted() Checkpoint {
	cp.CapabilityList = redact.String(cp.CapabilityList)
	if cp.Resume != nil {
		r := make([]string, len(cp.Resume))
		for i, u := range cp.Resume {
			r[i] = redact.String(u)
		}
		cp.Resume = r
	}
	return cp
}

// failure is the report's entry for a resource: its URI and message
// redacted, as events are.
func failure(uri, rel, msg string) Failure {
	return Failure{URI: redact.String(uri), Path: rel, Error: redact.String(msg)}
}

func (e *engine) phase(set, format string, args ...any) {
	e.emit(Event{Kind: EventPhase, Set: set, Message: fmt.Sprintf(format, args...)})
}

// Sync brings opt.Dest in step with the Source named by source (a base
// URL, a Source Description, a Capability List or a list). The error is
// for runs that could not start or could not read the Source (wrapping
// ErrDiscovery, ErrLocked or ErrState); failures of single resources are
// in the Report.
func Sync(ctx context.Context, source string, opt Options) (_ *Report, rerr error) {
	defer func() { rerr = redact.Error(rerr) }()
	m, err := Open(ctx, source, opt)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	return m.Sync(ctx)
}

// Mirror is a destination directory opened for a Source: discovery done,
// state open and locked. Its methods may be called from several
// goroutines; runs are serialised.
type Mirror struct {
	mu     sync.Mutex
	marked bool // the state says a run is under way
	e      *engine
	source string
	sets   []setInfo
}

// Open discovers the Source and opens (and locks) the state in opt.Dest.
func Open(ctx context.Context, source string, opt Options) (_ *Mirror, rerr error) {
	// Errors leave the package redacted (a Source URL may carry
	// user:password@ or ?token=), wrapping the original for errors.Is.
	defer func() { rerr = redact.Error(rerr) }()
	if opt.Client == nil {
		opt.Client = http.DefaultClient
	}
	if opt.Workers <= 0 {
		opt.Workers = 8
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Dest == "" {
		return nil, errors.New("no destination directory")
	}
	if !haveSyncfs {
		opt.FsyncEach = true // no batch flush on this platform
	}
	e := &engine{opt: opt, fd: -1}
	pol, err := origin.New(source, opt.AllowHosts)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDiscovery, source, err)
	}
	e.f = &fetch.Fetcher{Client: opt.Client, Retries: opt.Retries, BaseDelay: opt.BaseDelay, MaxDelay: opt.MaxDelay,
		RatePerHost: opt.RatePerHost, StallTimeout: opt.StallTimeout,
		MinRate: opt.MinRate, MinRateWindow: opt.MinRateWindow, Origin: pol}
	e.f.OnRetry = func(u string, attempt int, err error) {
		e.retries.Add(1)
		e.emit(Event{Kind: EventRetry, URI: u, Error: err.Error()})
	}
	e.fn = &fetch.Fetcher{Client: opt.Client, Retries: 1, BaseDelay: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond,
		RatePerHost: opt.RatePerHost, StallTimeout: opt.StallTimeout, OnRetry: e.f.OnRetry,
		MinRate: opt.MinRate, MinRateWindow: opt.MinRateWindow, Origin: pol}
	e.g = &discover.Getter{Client: opt.Client, Retries: opt.Retries, BaseDelay: opt.BaseDelay, MaxDelay: opt.MaxDelay,
		OnRetry: e.f.OnRetry, StallTimeout: opt.StallTimeout, MinRate: opt.MinRate, MinRateWindow: opt.MinRateWindow, Origin: pol}
	base, sets, err := e.discover(ctx, source)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrDiscovery, source, err)
	}
	if opt.Base != "" {
		base = opt.Base
	}
	// Resources live under the base (the Mapper refuses others), which
	// discovery may have found on another authority than SOURCE's.
	if err := pol.Add(base); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDiscovery, err)
	}
	e.g.CheckURLs = true // from here on, documents too stay on the policy
	if opt.Set != "" {
		var keep []setInfo
		var names []string
		for _, s := range sets {
			names = append(names, s.Name)
			if s.Name == opt.Set {
				keep = append(keep, s)
			}
		}
		if len(keep) == 0 {
			return nil, fmt.Errorf("%w: no set %q (the Source offers %s)", ErrDiscovery, opt.Set, strings.Join(names, ", "))
		}
		sets = keep
	}
	if opt.Base == "" {
		if err := elsewhere(pol, base, sets); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrDiscovery, err)
		}
	}
	if e.m, err = NewMapper(base, opt.Dest); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDiscovery, err)
	}
	if len(opt.AllowHosts) > 0 {
		e.m.AllowHosts(pol.AllowedHost)
	}
	readOnly := opt.DryRun || (opt.Mode == ModeAudit && !opt.Repair)
	if !readOnly {
		if err := os.MkdirAll(opt.Dest, fetch.DirPerm); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrState, err)
		}
	}
	if e.local, err = fetch.OpenDir(e.m.Root()); err != nil && !(readOnly && errors.Is(err, os.ErrNotExist)) {
		return nil, fmt.Errorf("%w: %v", ErrState, err)
	}
	switch {
	case opt.Target != nil:
		e.tg = opt.Target
		e.dir = &targetDir{tg: opt.Target, root: e.m.Root(), ctx: context.WithoutCancel(ctx)}
	case e.local != nil:
		e.dir = localDir{e.local}
	}
	if e.st, err = openState(e.m.Root(), readOnly); err != nil {
		if e.local != nil {
			e.local.Close()
		}
		return nil, err
	}
	e.st.fence = opt.Fence
	m := &Mirror{e: e, source: source, sets: sets}
	prev, err := e.st.meta("base")
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("%w: %v", ErrState, err)
	}
	if prev != "" && prev != e.m.Base() {
		m.Close()
		return nil, fmt.Errorf("%w: %s mirrors %s, not %s (use another directory)", ErrState, opt.Dest, prev, e.m.Base())
	}
	// A state records the objects of one mirror: given with another
	// Target (or a Target's with DEST itself), its records would make
	// the other's objects of the same bytes ours to overwrite and delete,
	// and its missing objects mirrored.
	target := ""
	if opt.Target != nil {
		target = opt.Target.Location()
	}
	prevTarget, err := e.st.meta("target")
	if err != nil {
		m.Close()
		return nil, fmt.Errorf("%w: %v", ErrState, err)
	}
	if prevTarget != "" && prevTarget != target {
		m.Close()
		if target == "" {
			target = opt.Dest
		}
		return nil, fmt.Errorf("%w: the state in %s is the mirror %s's, not %s's (use another state directory)", ErrState, opt.Dest, prevTarget, target)
	}
	if err := e.probeMTime(filepath.Join(e.m.Root(), StateDirName, "tmp"), readOnly); err != nil {
		m.Close()
		return nil, fmt.Errorf("%w: finding how coarse the mtimes DEST's file system keeps are: %v", ErrState, err)
	}
	if !readOnly {
		e.tmpDir = filepath.Join(e.m.Root(), StateDirName, "tmp")
		if _, isDir := opt.Target.(interface{ Path() string }); opt.Target != nil && !isDir {
			// A bucket's keys differ in any byte: nothing folds.
		} else if e.m.fold, err = probeFolding(&opt, e.tmpDir); err != nil {
			m.Close()
			return nil, fmt.Errorf("%w: finding how DEST's file system compares names: %v", ErrState, err)
		}
		if err := e.st.setMeta("base", e.m.Base()); err != nil {
			m.Close()
			return nil, fmt.Errorf("%w: %v", ErrState, err)
		}
		if target != "" && prevTarget == "" {
			if err := e.st.setMeta("target", target); err != nil {
				m.Close()
				return nil, fmt.Errorf("%w: %v", ErrState, err)
			}
		}
		writeMirrorBase(e.m.Root(), e.m.Base())
		if e.fd, err = openSyncfs(e.m.Root()); err != nil {
			m.Close()
			return nil, fmt.Errorf("%w: %v", ErrState, err)
		}
	}
	return m, nil
}

// Sets returns the sets this Mirror synchronizes.
func (m *Mirror) Sets() []discover.Set { return m.sets }

// Emit sends ev to Options.Events (stamped with the clock's time when it
// has none): destination/follow reports its subscriptions through it, so
// that one stream tells everything a run does.
func (m *Mirror) Emit(ev Event) { m.e.emit(ev) }

// Base returns the Source's base URL resources are mapped from.
func (m *Mirror) Base() string { return m.e.m.Base() }

// Close releases the state and its lock.
func (m *Mirror) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.e.fd >= 0 {
		closeSyncfs(m.e.fd)
		m.e.fd = -1
	}
	if m.e.local != nil {
		m.e.local.Close()
		m.e.local = nil
	}
	m.e.dir = nil
	return errors.Join(m.unmark(), m.e.st.Close())
}

// runMarkIntents begins the mark of a run that writes intents before its
// installs (intents.go); older versions wrote the time alone.
const runMarkIntents = "intents "

// mark records that a run is under way, so that the next Open after a
// crash removes the temporary files it may have left; the first mark of a
// session does that cleaning when the previous session was not closed.
func (m *Mirror) mark(rep *Report) error {
	e := m.e
	if e.st.readOnly || m.marked {
		return nil
	}
	if dirty, _ := e.st.meta("running"); dirty != "" {
		// A run that wrote intents left none of its installs unnamed:
		// resolveIntents records them below, and any other file the
		// state does not name is a user's, never overwritten. Only a
		// run of an older version (its mark lacks the prefix) may have
		// left files no intent names, which leftByCrash then guesses.
		e.crashed = !strings.HasPrefix(dirty, runMarkIntents)
		e.phase("", "previous run did not finish: removing temporary files")
		n, _ := fetch.CleanTemp(e.m.Root())
		if e.tg != nil {
			n += e.cleanTarget()
		}
		if rep != nil {
			rep.Cleaned = n
		}
	}
	if e.tg != nil {
		n := e.cleanUploads(context.Background())
		if rep != nil {
			rep.Cleaned += n
		}
	}
	// The mark's commit carries the start-up's meta values (setMeta); a
	// fresh state's is not synced (state.commit says why).
	err := e.st.commit(true, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put([]byte("running"), []byte(runMarkIntents+e.opt.Now().UTC().Format(time.RFC3339)))
	})
	if err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	m.marked = true
	// Files a run that did not finish installed without recording them
	// are recorded as this tool's own (intents.go).
	n, err := e.resolveIntents(context.Background())
	if err != nil {
		return fmt.Errorf("%w: intents: %v", ErrState, err)
	}
	if n > 0 {
		e.phase("", "previous run did not finish: %d files it installed but had not recorded are recorded now", n)
	}
	return nil
}

func (m *Mirror) unmark() error {
	if !m.marked {
		return nil
	}
	m.marked = false
	if v, err := m.e.st.meta("running"); err == nil && v == "" && !m.e.st.metaPending("running") {
		return nil // cleared with the last checkpoint
	}
	if err := m.e.st.putMeta("running", ""); err != nil {
		return fmt.Errorf("%w: %v", ErrState, err)
	}
	return nil
}

// begin prepares a run: scratch space, the run mark, the seen set.
func (m *Mirror) begin(rep *Report) (func() error, error) {
	e := m.e
	scratch := os.TempDir()
	if !e.st.readOnly {
		if err := noLink(e.tmpDir, true); err != nil {
			return nil, err
		}
		os.RemoveAll(e.tmpDir)
		if err := os.MkdirAll(e.tmpDir, 0o700); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrState, err)
		}
		scratch = e.tmpDir
	}
	e.scratch = scratch
	if err := m.mark(rep); err != nil {
		return nil, err
	}
	var err error
	if e.seen, err = newSeen(scratch); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrState, err)
	}
	return func() error {
		e.seen.close()
		if !e.st.readOnly {
			os.RemoveAll(e.tmpDir)
		}
		return m.unmark()
	}, nil
}

// Sync runs the mode of the Options over every set.
func (m *Mirror) Sync(ctx context.Context) (_ *Report, rerr error) {
	defer func() { rerr = redact.Error(rerr) }() // runs last: after end's error is in
	m.mu.Lock()
	defer m.mu.Unlock()
	start := time.Now()
	e := m.e
	e.retries.Store(0)
	rep := &Report{Source: redact.String(m.source), Base: e.m.Base(), Dest: e.destName(), DryRun: e.opt.DryRun}
	end, err := m.begin(rep)
	if err != nil {
		return nil, err
	}
	if e.emptyTarget, err = e.emptyAtStart(ctx); err != nil {
		end()
		return nil, err
	}
	defer func() { e.emptyTarget = false }()
	// Scratch databases go and the run mark is cleared however the run
	// ends (an error too: nothing is left half-done that a crash would
	// not also leave).
	defer func() {
		if eerr := end(); rerr == nil {
			rerr = eerr
		}
	}()
	for i, s := range m.sets {
		e.unmarkAtCheckpoint = m.marked && i == len(m.sets)-1 && e.opt.Mode != ModeAudit
		sr, err := e.runSet(ctx, s)
		e.unmarkAtCheckpoint = false
		if sr != nil {
			rep.Sets = append(rep.Sets, sr)
		}
		if err != nil {
			return rep, err
		}
	}
	if e.opt.Mode == ModeAudit && len(rep.Sets) > 0 {
		if err := e.auditExtras(ctx, rep.Sets[len(rep.Sets)-1]); err != nil {
			return rep, err
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	rep.Retries = e.retries.Load()
	return rep, ctx.Err()
}

func (e *engine) runSet(ctx context.Context, s setInfo) (*SetReport, error) {
	start := time.Now()
	cp, err := e.st.checkpoint(s.Name)
	if err != nil {
		return nil, err
	}
	if s.CapabilityList != "" {
		cp.CapabilityList = s.CapabilityList
	}
	sr := &SetReport{Set: s.Name}
	defer func() { sr.Seconds = time.Since(start).Seconds() }()
	switch s.DirectCapability {
	case rs.CapResourceList:
		s.ResourceList = s.Direct
	case rs.CapChangeList:
		s.ChangeList = s.Direct
	case rs.CapResourceDump:
		s.ResourceDump = s.Direct
	}
	var modes []string
	switch {
	case s.Feed != "":
		modes = append(modes, "feed")
		err = e.feed(ctx, s, &cp, sr)
	case e.opt.Mode == ModeAudit:
		modes = append(modes, "audit")
		err = e.audit(ctx, s, &cp, sr)
	case e.opt.Mode == ModeBaseline || !cp.Baseline && s.ResourceList != "":
		// A baseline catches up with the Change Lists itself.
		modes = append(modes, "baseline")
		err = e.baseline(ctx, s, &cp, sr, &modes)
	case s.ChangeList == "":
		modes = append(modes, "baseline")
		err = e.baseline(ctx, s, &cp, sr, &modes)
	default:
		modes = append(modes, "incremental")
		var gap string
		gap, err = e.incremental(ctx, s, &cp, sr)
		if err == nil && gap != "" && s.ResourceList != "" {
			sr.Gap = gap
			e.phase(s.Name, "gap in the Change Lists (%s): repairing with a baseline against the current Resource List", gap)
			modes = append(modes, "baseline (gap repair)")
			err = e.baseline(ctx, s, &cp, sr, &modes)
		} else if gap != "" {
			sr.Gap = gap + " (no Resource List to repair from)"
			sr.Failed++
		}
	}
	sr.Mode = strings.Join(modes, "+")
	e.noteDeleted(s.Name, sr.Deleted)
	cp.LastRun = e.opt.Now().UTC()
	sr.Checkpoint = cp.redacted()
	if err == nil && !e.st.readOnly {
		if e.unmarkAtCheckpoint {
			// The run's last commit: nothing it installed is left
			// unrecorded, so the mark goes with the checkpoint (a
			// commit, two fdatasync, less).
			if perr := e.st.setMeta("running", ""); perr != nil {
				err = fmt.Errorf("%w: %v", ErrState, perr)
			}
		}
	}
	if err == nil && !e.st.readOnly {
		if perr := e.st.putCheckpoint(cp); perr != nil {
			err = fmt.Errorf("%w: %v", ErrState, perr)
		}
	}
	done := Event{Kind: EventDone, Set: s.Name, Mode: sr.Mode, Message: sr.Summary(e.opt.DryRun), SourceUntil: sr.SourceUntil}
	if err == nil && !e.st.readOnly {
		out := cp.redacted()
		done.Checkpoint = &out
	} else if saved, cerr := e.st.checkpoint(s.Name); cerr == nil {
		saved = saved.redacted()
		done.Checkpoint = &saved // what the state records: this run changed nothing
	}
	e.emit(done)
	return sr, err
}

// Summary is the one-line account of the set's run.
func (sr *SetReport) Summary(dry bool) string {
	var b strings.Builder
	verb := "fetched"
	if dry {
		verb = "would fetch"
	}
	b.WriteString(sr.Mode + ":")
	auditOnly := len(sr.Audit) > 0 && sr.Fetched == 0 && sr.Deleted == 0 && sr.Kept == 0 && sr.Failed == 0
	if !auditOnly && sr.FromDump > 0 {
		// What came from the dump, then what the Resource List check added:
		// "fetched 2002 ..., skipped 2002" read as if every file counted twice.
		fmt.Fprintf(&b, " %d from the Resource Dump (%s), then checked against the Resource List: %s %d more (%s), %d already in sync, deleted %d, kept %d, failed %d",
			sr.FromDump, humanBytes(sr.DumpBytes), verb, sr.Fetched-sr.FromDump, humanBytes(sr.Bytes-sr.DumpBytes), sr.Skipped, sr.Deleted, sr.Kept, sr.Failed)
	} else if !auditOnly {
		fmt.Fprintf(&b, " %s %d (%s), skipped %d, deleted %d, kept %d, failed %d", verb, sr.Fetched, humanBytes(sr.Bytes), sr.Skipped, sr.Deleted, sr.Kept, sr.Failed)
	}
	if !auditOnly {
		if sr.Adopted > 0 {
			fmt.Fprintf(&b, " (%d of them already here)", sr.Adopted)
		}
		if len(sr.Audit) > 0 {
			b.WriteString(";")
		}
	}
	if len(sr.Audit) > 0 {
		fmt.Fprintf(&b, " %d in sync, %d missing, %d changed, %d extra, %d unverifiable",
			sr.Audit[AuditInSync], sr.Audit[AuditMissing], sr.Audit[AuditChanged], sr.Audit[AuditExtra], sr.Audit[AuditUnverifiable])
	}
	if sr.Excluded > 0 {
		fmt.Fprintf(&b, "; excluded %d (by the filters: neither fetched nor deleted)", sr.Excluded)
	}
	if sr.Replaced > 0 {
		fmt.Fprintf(&b, "; replaced %d not written by resourcesync (--force; each kept as NAME%s)", sr.Replaced, ForceSuffix)
	}
	if sr.Vanished > 0 {
		fmt.Fprintf(&b, "; vanished %d (changed or gone at the Source during the run: judged by its later state)", sr.Vanished)
	}
	if sr.Gap != "" {
		b.WriteString("; gap: " + sr.Gap)
	}
	b.WriteString(sr.refusedDeletes())
	b.WriteString(sr.resetRefused())
	return b.String()
}

// humanBytes is the tool's one convention: IEC units (internal/units).
func humanBytes(n int64) string { return units.Bytes(n) }

// syncfs makes everything written to DEST's file system durable (Linux;
// elsewhere each file was fsynced before its rename).
func (e *engine) syncfs() error {
	if e.tg != nil {
		if s, ok := e.tg.(storage.Syncer); ok && !e.opt.FsyncEach && !e.st.readOnly {
			return s.Sync(context.Background())
		}
		return nil
	}
	if e.fd < 0 || e.opt.FsyncEach {
		return nil
	}
	return syncfs(e.fd)
}

// removeEmptyParents removes the directories between abs and DEST that
// the removal of abs left empty (through DEST's handle: nothing outside,
// no symbolic link followed).
func (e *engine) removeEmptyParents(abs string) {
	if e.dir != nil {
		e.dir.RemoveEmptyParents(abs)
	}
}

// lstat stats a file in DEST without following a symbolic link; one among
// its parents is a *fetch.SymlinkError.
func (e *engine) lstat(abs string) (os.FileInfo, error) {
	if e.dir == nil {
		return nil, &os.PathError{Op: "lstat", Path: abs, Err: os.ErrNotExist}
	}
	return e.dir.Lstat(abs)
}
