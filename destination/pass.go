package destination

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/storage"
)

// job is one resource a pass hands to its workers.
type job struct {
	uri, rel string
	e        rs.Entry
	// checkLocal hashes an existing local file first: an audit reports
	// what it finds, a sync adopts a file that already has the right
	// bytes (left by a run that crashed before recording it).
	checkLocal bool
	audit      bool // report the local status; fetch only with Repair
	// foreign is a file at the path that the state does not name as this
	// URI's: it is adopted only with the right bytes and never
	// overwritten (unless a crashed run may have left it).
	foreign bool
	// notOwned carries the record's NotOwned over to the new record.
	notOwned bool
	// forced: a foreign file replaced under Options.Force, kept first
	// (keepOld); keptVersion is the Target's version of it.
	forced      bool
	keptVersion string
}

// ErrNotOwned is a file in DEST at a resource's path that resourcesync did
// not write and that differs from the Source's: it is not overwritten.
var ErrNotOwned = errors.New("not written by resourcesync")

// pass runs jobs on the engine's workers and commits their results to the
// state in batches, after the files are durable.
type pass struct {
	e   *engine
	set string
	sr  *SetReport
	ctx context.Context
	// stamp is the mtime this pass gives the files of entries without
	// lastmod (the pass's start, in even seconds, which FAT keeps): with
	// the intents, what tells a file a killed run installed from one a
	// user put there when the Source gives no digest.
	stamp time.Time

	jobs chan job
	// ops carries batches of state operations to the committer. A record
	// is appended to opBuf and opBuf sent when full (under opMu, so that
	// batches keep the order of their records): a hand-off per file to
	// the committer's goroutine cost about as much as the file's install.
	ops   chan []stateOp
	opMu  sync.Mutex
	opBuf []stateOp
	wg    sync.WaitGroup
	done  chan struct{}

	// fetcher, if set, replaces the engine's (notifications retry less).
	fetcher *fetch.Fetcher
	// bulk is the Source's bulk GET when the pass uses it (bulk.go).
	bulk atomic.Pointer[bulkGet]
	// fsyncEach fsyncs each file instead of one syncfs per batch: cheaper
	// for the few files of a notification (syncfs flushes the whole file
	// system).
	fsyncEach bool

	// refuse: deletions exceed Options.MaxDelete; deleteURI holds the
	// checkpoint instead of deleting.
	refuse bool

	mu        sync.Mutex
	failedAt  rs.Time // earliest change datetime among failures
	commitErr error

	// stats keeps the directory of the last path planSync looked at open
	// (planSync runs on the goroutine that reads the list).
	stats fetch.Parents

	// claimed maps the paths this pass's changes touch to their URIs
	// (created on demand; a baseline's list uses the run's seen set).
	claimed *seenSet

	// suspects, when set (watchVanished), keeps the resources whose
	// download failed as a change at the Source since the lists were
	// read would make it fail: engine.settle judges them against the
	// Source's later state instead of failing them at once.
	suspects *suspects

	// intents takes the planned jobs to the journal stage (intents.go),
	// which hands them to the workers once their intents are durable;
	// nil when nothing is written (dry run, read-only).
	intents     chan job
	journalDone chan struct{}
	journalErr  error // set by the journal stage, read after journalDone
}

// claims returns the set of paths claimed in this pass: the run's seen
// set for a list that is tracked, else the pass's own.
func (p *pass) claims(track bool) (*seenSet, error) {
	if track {
		return p.e.seen, nil
	}
	if p.claimed == nil {
		dir := p.e.tmpDir
		if dir == "" {
			dir = os.TempDir()
		} else if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		s, err := newSeen(dir)
		if err != nil {
			return nil, err
		}
		p.claimed = s
	}
	return p.claimed, nil
}

const maxFailuresListed = 100

func (e *engine) newPass(ctx context.Context, set string, sr *SetReport) *pass {
	p := &pass{e: e, set: set, sr: sr, ctx: ctx, stamp: e.opt.Now().UTC().Truncate(2 * time.Second),
		jobs: make(chan job, max(4*e.opt.Workers, bulkBatch)), ops: make(chan []stateOp, commitBacklog/opBatch), done: make(chan struct{})}
	for range e.opt.Workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			var dirs fetch.Parents // lists are mostly sorted: files come a directory at a time
			defer dirs.Close()
			p.runWorker(ctx, &dirs) // bulk.go
		}()
	}
	go p.committer()
	if !e.opt.DryRun && !e.st.readOnly {
		p.intents, p.journalDone = make(chan job, intentBatch), make(chan struct{})
		go p.journal()
	}
	return p
}

// finish waits for the workers and the last commit.
func (p *pass) finish() error {
	if p.intents != nil {
		close(p.intents)
		<-p.journalDone
	}
	close(p.jobs)
	p.wg.Wait()
	p.opMu.Lock()
	if len(p.opBuf) > 0 {
		p.ops <- p.opBuf
		p.opBuf = nil
	}
	p.opMu.Unlock()
	close(p.ops)
	<-p.done
	p.stats.Close()
	if p.claimed != nil {
		p.claimed.close()
		p.claimed = nil
	}
	if p.commitErr != nil {
		return p.commitErr
	}
	if p.journalErr != nil {
		return p.journalErr
	}
	if p.intents != nil {
		// Every file the pass installed is recorded: the intents left
		// are of files it did not install.
		if err := p.e.st.clearIntents(); err != nil {
			return fmt.Errorf("%w: %v", ErrState, err)
		}
	}
	return p.ctx.Err()
}

func (p *pass) submit(j job) error {
	to := p.jobs
	if p.intents != nil {
		to = p.intents
	}
	select {
	case to <- j:
		return nil
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
}

// Batches of state operations: one is handed to the flusher at
// commitBatch operations (or every commitEvery) if it is free; the
// workers block only when commitBacklog operations wait behind a flush (a
// syncfs can take long on a busy disk, and the next batch is collected
// meanwhile). A syncfs flushes the whole file system, other programs'
// writes included: at one every 250 ms a baseline of 20,000 small files
// made 44 to 88 of them, each 15 to 30 ms on a busy disk (strace). What a
// crash loses is only unrecorded: the next run adopts those files by
// their digests.
const (
	commitBatch   = 4096
	commitBacklog = 4 * commitBatch
	commitEvery   = time.Second
	opBatch       = 256 // records handed to the committer at once
)

func (p *pass) committer() {
	defer close(p.done)
	batches := make(chan []stateOp) // unbuffered: taken only by a free flusher
	flushed := make(chan struct{})
	go func() {
		defer close(flushed)
		for b := range batches {
			p.flush(b)
		}
	}()
	var batch []stateOp
	t := time.NewTicker(commitEvery)
	defer t.Stop()
	hand := func(wait bool) {
		if len(batch) == 0 {
			return
		}
		if wait {
			batches <- batch
		} else {
			select {
			case batches <- batch:
			default:
				return // the flusher is busy: keep collecting
			}
		}
		batch = nil // the flusher owns it now
	}
	for {
		select {
		case ops, ok := <-p.ops:
			if !ok {
				hand(true)
				close(batches)
				<-flushed
				return
			}
			batch = append(batch, ops...)
			if len(batch) >= commitBatch {
				hand(len(batch) >= commitBacklog)
			}
		case <-t.C:
			// What was recorded since is committed too. A producer may
			// hold opMu while it waits to send: not waited for.
			if p.opMu.TryLock() {
				batch = append(batch, p.opBuf...)
				p.opBuf = p.opBuf[:0]
				p.opMu.Unlock()
			}
			hand(false)
		}
	}
}

// flush makes a batch's files durable and records them; after an error
// nothing more is recorded. Batches are flushed one at a time, in order.
func (p *pass) flush(batch []stateOp) {
	if p.commitErr != nil {
		return
	}
	// The files a record names must be durable before the record is:
	// with one syncfs, or, when each file was fsynced before its
	// rename, by fsyncing the directories that hold the new names.
	// Either way the batch is recorded.
	if err := p.durable(batch); err != nil {
		p.commitErr = fmt.Errorf("%w: %v", ErrState, err)
	} else if err := p.e.st.apply(batch); err != nil {
		p.commitErr = fmt.Errorf("%w: %v", ErrState, err)
	}
}

// durable makes the files the batch records durable.
func (p *pass) durable(batch []stateOp) error {
	if p.e.tg != nil {
		// A Target's commit without NoSync is durable when it returns
		// (a local one fsyncs the file and its directory); with NoSync,
		// its Syncer makes the batch so. The Mapper's directories are
		// the state's, not the mirror's: nothing to fsync there.
		if p.fsyncEach {
			return nil
		}
		return p.e.syncfs()
	}
	if !p.fsyncEach && !p.e.opt.FsyncEach {
		if err := p.e.syncfs(); err != nil {
			return fmt.Errorf("syncfs: %v", err)
		}
		return nil
	}
	// The files' bytes were fsynced; their names (and any directory
	// created for them) are entries of directories up to DEST.
	dirs := map[string]bool{}
	for _, op := range batch {
		if op.rec == nil {
			continue // a lost removal leaves a file the state does not name: kept, never deleted
		}
		for d := path.Dir(op.rec.Path); !dirs[d]; d = path.Dir(d) {
			dirs[d] = true // "." is DEST itself
			if d == "." {
				break
			}
		}
	}
	for d := range dirs {
		if err := syncDir(p.e.m.Path(d)); err != nil {
			return fmt.Errorf("fsync %s: %v", p.e.m.Path(d), err)
		}
	}
	return nil
}

func (p *pass) record(uri string, r *Record) {
	if p.e.opt.DryRun || p.e.st.readOnly {
		return
	}
	p.opMu.Lock()
	p.opBuf = append(p.opBuf, stateOp{uri: uri, rec: r})
	if len(p.opBuf) >= opBatch {
		p.ops <- p.opBuf
		p.opBuf = nil
	}
	p.opMu.Unlock()
}

func (p *pass) count(fn func(sr *SetReport)) {
	p.mu.Lock()
	fn(p.sr)
	p.mu.Unlock()
}

func (p *pass) fail(uri, rel string, when rs.Time, err error) {
	p.mu.Lock()
	p.sr.Failed++
	if len(p.sr.Failures) < maxFailuresListed {
		p.sr.Failures = append(p.sr.Failures, failure(uri, rel, err.Error()))
	}
	if !when.IsZero() && (p.failedAt.IsZero() || when.Before(p.failedAt)) {
		p.failedAt = when
	}
	p.mu.Unlock()
	p.e.emit(Event{Kind: EventFailed, Set: p.set, URI: uri, Path: rel, Error: err.Error(), DateTime: knownTime(when)})
}

func (p *pass) auditResult(j job, status string) {
	p.count(func(sr *SetReport) {
		if sr.Audit == nil {
			sr.Audit = map[string]int{}
		}
		sr.Audit[status]++
	})
	p.e.emit(Event{Kind: EventAudit, Set: p.set, URI: j.uri, Path: j.rel, Status: status})
}

func (p *pass) work(j job, dirs *fetch.Parents) {
	abs := p.e.m.Path(j.rel)
	force := false // a foreign file, replaced under Options.Force
	if j.checkLocal {
		status, rec, err := p.e.verifyLocal(abs, &j.e)
		if err != nil {
			p.fail(j.uri, j.rel, j.e.EventTime(), err)
			return
		}
		if j.audit {
			p.auditResult(j, status)
		}
		if status == AuditInSync || (status == AuditUnverifiable && j.audit && !j.foreign) {
			rec.Set, rec.Path = p.set, j.rel
			fillRemote(&rec, &j.e)
			rec.NotOwned = j.notOwned || j.foreign && !p.e.leftByCrash(&j.e, &rec)
			p.record(j.uri, &rec)
			if !j.audit {
				p.count(func(sr *SetReport) { sr.Adopted++; sr.Skipped++ })
				msg := "already here with the right bytes"
				if rec.NotOwned {
					msg += " (not written by resourcesync: it will never be deleted)"
				}
				p.e.emit(Event{Kind: EventSkipped, Set: p.set, URI: j.uri, Path: j.rel, Bytes: rec.Length, Message: msg})
			}
			return
		}
		if j.audit && !p.e.opt.Repair {
			return
		}
		if j.foreign && status != AuditMissing && !p.e.crashed {
			why := "differs from the Source's"
			if status == AuditUnverifiable {
				why = "cannot be compared with the Source's (no hash, no length)"
			}
			if !p.e.opt.Force {
				p.fail(j.uri, j.rel, j.e.EventTime(), fmt.Errorf("%w: %s is here already and %s: not overwritten (move it away, or sync with --force to keep it as %s%s and mirror the Source's)", ErrNotOwned, j.rel, why, j.rel, ForceSuffix))
				return
			}
			force = true
		}
	}
	if p.e.opt.DryRun {
		msg := "dry run"
		if force {
			if p.oldTaken(abs) {
				// The real run would refuse it: say so now (a copy a
				// killed run left of the same bytes, which the real run
				// takes as done, is the one case this overstates).
				p.fail(j.uri, j.rel, j.e.EventTime(), fmt.Errorf("dry run: %w: %s is here already and differs from the Source's, and %s%s is taken too: would not be replaced with --force (move one of them away)", ErrNotOwned, j.rel, j.rel, ForceSuffix))
				return
			}
			msg += "; would replace a file not written by resourcesync, kept as " + j.rel + ForceSuffix
			p.count(func(sr *SetReport) { sr.Replaced++ })
		}
		p.count(func(sr *SetReport) { sr.Fetched++; sr.Bytes += j.e.MD.Length })
		p.e.emit(Event{Kind: EventFetched, Set: p.set, URI: j.uri, Path: j.rel, Bytes: j.e.MD.Length, Message: msg,
			Change: string(j.e.MD.Change), DateTime: knownTime(changeTime(&j.e))})
		return
	}
	if _, err := rs.DecodeDigests(j.e.MD.Hashes); err != nil {
		// Fail closed before downloading: these bytes could not be trusted.
		p.fail(j.uri, j.rel, j.e.EventTime(), err)
		return
	}
	undo := func() {}
	if force {
		u, err := p.keepOld(&j, abs)
		if err != nil {
			p.fail(j.uri, j.rel, j.e.EventTime(), err)
			return
		}
		undo = u
	}
	req := fetch.Request{URLs: locations(&j.e), Length: j.e.MD.Length, HasLength: j.e.MD.HasLength,
		Hashes: p.e.verifyHashes(j.e.MD.Hashes), Path: abs, Dir: p.e.local, ModTime: p.installTime(&j.e), NoSync: !p.e.opt.FsyncEach && !p.fsyncEach, Parents: dirs}
	if p.e.tg != nil {
		if err := p.targetRequest(&req, j); err != nil {
			undo()
			p.fail(j.uri, j.rel, j.e.EventTime(), err)
			return
		}
	}
	f := p.e.f
	if p.fetcher != nil {
		f = p.fetcher
	}
	res, err := f.Fetch(p.ctx, req)
	if err != nil {
		undo() // what was there stays, under its own name only
		if p.ctx.Err() == nil && !p.suspect(j, err) {
			p.fail(j.uri, j.rel, j.e.EventTime(), err)
		}
		return
	}
	if j.forced {
		p.count(func(sr *SetReport) { sr.Replaced++ })
		p.e.emit(Event{Kind: EventWarning, Set: p.set, URI: j.uri, Path: j.rel,
			Message: "replaced a file not written by resourcesync (--force); it is kept as " + j.rel + ForceSuffix})
	}
	p.installed(j, res)
}

// leftByCrash reports whether a file the state does not name, found with
// the bytes of entry e, is one this tool installed in a run that was
// killed before recording it: the previous run did not finish, and the
// file has the mtime an install gives it (the entry's lastmod).
func (e *engine) leftByCrash(en *rs.Entry, found *Record) bool {
	return e.crashed && (en.LastMod.IsZero() || e.mtimeIs(found.MTime, en.LastMod.Time().UnixNano()))
}

// testAfterInstall, set by a test, runs after a file is renamed into
// place and before it is recorded: the window a kill -9 must survive.
var testAfterInstall func(rel string)

// installTime is the mtime an install of en gives its file: the Source's
// lastmod, else the pass's stamp.
func (p *pass) installTime(en *rs.Entry) time.Time {
	if mt := en.LastMod.Time(); !mt.IsZero() {
		return mt
	}
	return p.stamp
}

// installed records a file that is now in place.
func (p *pass) installed(j job, res fetch.Result) {
	if testAfterInstall != nil {
		testAfterInstall(j.rel)
	}
	rec := Record{Set: p.set, Path: j.rel, Length: res.Length, SHA256: res.SHA256, MD5: res.MD5, SHA1: res.SHA1, NotOwned: j.notOwned, Version: res.Info.Version}
	fillRemote(&rec, &j.e)
	mt := p.installTime(&j.e)
	if !mt.IsZero() {
		rec.MTime = mt.UnixNano() // fetch set it as the file's mtime
	}
	if mt.IsZero() || p.e.mtimeGrain != 0 {
		// A file system that keeps it rounded (mtime.go): the mtime the
		// file has.
		if fi, err := p.e.lstat(p.e.m.Path(j.rel)); err == nil {
			rec.MTime = fi.ModTime().UnixNano()
		}
	}
	p.record(j.uri, &rec)
	p.count(func(sr *SetReport) { sr.Fetched++; sr.Bytes += res.Length })
	p.e.emit(Event{Kind: EventFetched, Set: p.set, URI: j.uri, Path: j.rel, Bytes: res.Length,
		Change: string(j.e.MD.Change), DateTime: knownTime(changeTime(&j.e))})
	p.unverified(j, res.Unverified, res.MD5 == "" && res.SHA1 == "" && digestHex(j.e.MD.Hashes, rs.SHA256) == "")
}

// unverified reports digests of algorithms that cannot be checked. When
// they were all the Source gave, the file was installed on its length
// alone and is counted as unverified.
func (p *pass) unverified(j job, algs []string, only bool) {
	if len(algs) == 0 {
		return
	}
	msg := "digest algorithm not verifiable here: " + strings.Join(algs, ", ")
	if only {
		msg = "installed unverified (length only): " + msg
		p.count(func(sr *SetReport) { sr.Unverified++ })
	}
	p.e.emit(Event{Kind: EventWarning, Set: p.set, URI: j.uri, Path: j.rel, Message: msg})
}

func fillRemote(r *Record, e *rs.Entry) {
	r.RemoteHash = e.MD.Hashes.String()
	r.LastMod = e.LastMod.Time()
	r.Changed = e.MD.DateTime.Time()
}

// locations returns the entry's loc followed by its duplicates by priority.
func locations(e *rs.Entry) []string {
	urls := []string{e.Loc}
	var dups []rs.Link
	for _, l := range e.Links {
		if l.Rel == rs.RelDuplicate && l.Href != "" {
			dups = append(dups, l)
		}
	}
	sort.SliceStable(dups, func(i, k int) bool {
		pi, pk := dups[i].Pri, dups[k].Pri
		if pi == 0 {
			pi = 1 << 30
		}
		if pk == 0 {
			pk = 1 << 30
		}
		return pi < pk
	})
	for _, l := range dups {
		urls = append(urls, l.Href)
	}
	return urls
}

// digestHex returns the entry's digest for alg (rs.MD5, rs.SHA1,
// rs.SHA256) as lower-case hex, or "" when it offers none or its digests
// do not decode (rs.DecodeDigests; the fetch then fails closed).
func digestHex(h rs.Hashes, alg string) string {
	d, err := rs.DecodeDigests(h)
	if b := d.Get(alg); err == nil && b != nil {
		return hex.EncodeToString(b)
	}
	return ""
}

// sameRemote reports whether the Source's entry describes the bytes the
// record says were installed.
func sameRemote(e *rs.Entry, r *Record) bool {
	if e.MD.HasLength && e.MD.Length != r.Length {
		return false
	}
	compared := false
	for _, c := range [...]struct{ alg, have string }{{rs.SHA256, r.SHA256}, {rs.MD5, r.MD5}, {rs.SHA1, r.SHA1}} {
		want := digestHex(e.MD.Hashes, c.alg)
		if want == "" || c.have == "" {
			continue
		}
		if want != c.have {
			return false
		}
		compared = true
	}
	if compared {
		return true
	}
	if len(e.MD.Hashes) > 0 {
		return e.MD.Hashes.String() == r.RemoteHash && (e.LastMod.IsZero() || e.LastMod.Time().Equal(r.LastMod))
	}
	if !e.LastMod.IsZero() {
		return e.LastMod.Time().Equal(r.LastMod)
	}
	return false // nothing to compare: fetch again
}

// unchangedHere reports whether the file is still what was installed.
func (e *engine) unchangedHere(abs string, r *Record) bool {
	return e.unchangedIn(abs, r, nil)
}

// lstat is engine.lstat for planSync, through the pass's stats.
func (p *pass) lstat(abs string) (os.FileInfo, error) {
	if p.e.dir == nil {
		return p.e.lstat(abs)
	}
	return p.e.dir.LstatIn(abs, &p.stats)
}

// unchangedIn is unchangedHere with the parent directory kept in c.
func (e *engine) unchangedIn(abs string, r *Record, c *fetch.Parents) bool {
	if e.dir == nil {
		return false
	}
	fi, err := e.dir.LstatIn(abs, c)
	return err == nil && e.unchangedInfo(fi, r)
}

// verifyLocal hashes the file at abs with the algorithms the entry offers
// and compares it with the entry. Digests that do not decode are an error
// (nothing is adopted on them); digests only of algorithms that cannot be
// checked make the file unverifiable.
func (eng *engine) verifyLocal(abs string, e *rs.Entry) (string, Record, error) {
	var rec Record
	dgs, err := rs.DecodeDigests(e.MD.Hashes)
	if err != nil {
		return "", rec, err
	}
	fi, err := eng.lstat(abs)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscallENOTDIR) {
		return AuditMissing, rec, nil
	}
	if err != nil {
		return "", rec, err
	}
	if !fi.Mode().IsRegular() {
		return AuditChanged, rec, nil
	}
	rec.Length, rec.MTime = fi.Size(), fi.ModTime().UnixNano()
	if in, ok := fi.Sys().(storage.Info); ok {
		rec.Version = in.Version // a Target's object
	}
	if e.MD.HasLength && fi.Size() != e.MD.Length {
		return AuditChanged, rec, nil
	}
	type dg struct {
		alg  string
		want string
		h    hash.Hash
		dst  *string
	}
	var ds []dg
	for _, c := range [...]struct {
		alg string
		mk  func() hash.Hash
		dst *string
	}{{rs.MD5, md5.New, &rec.MD5}, {rs.SHA1, sha1.New, &rec.SHA1}, {rs.SHA256, sha256.New, &rec.SHA256}} {
		if w := dgs.Get(c.alg); w != nil {
			ds = append(ds, dg{c.alg, hex.EncodeToString(w), c.mk(), c.dst})
		}
	}
	if len(ds) == 0 {
		if e.MD.HasLength && len(dgs.Unknown) == 0 {
			return AuditInSync, rec, nil // the length is all the Source gives
		}
		return AuditUnverifiable, rec, nil
	}
	f, err := eng.dir.Open(abs)
	if err != nil {
		return "", rec, err
	}
	defer f.Close()
	ws := make([]io.Writer, len(ds))
	for i := range ds {
		ws[i] = ds[i].h
	}
	buf := copyBufs.Get().(*[]byte)
	defer copyBufs.Put(buf)
	// Through a bare Reader: *os.File's WriteTo would allocate a buffer
	// per file.
	if _, err := io.CopyBuffer(io.MultiWriter(ws...), struct{ io.Reader }{f}, *buf); err != nil {
		return "", rec, fmt.Errorf("reading %s: %w", abs, err)
	}
	status := AuditInSync
	for _, d := range ds {
		got := hex.EncodeToString(d.h.Sum(nil))
		*d.dst = got
		if got != d.want {
			status = AuditChanged
		}
	}
	return status, rec, nil
}

// copyBufs are the buffers verifyLocal hashes files through.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// verifyHashes returns the digests a download is checked against: the
// strongest one we can compute, or with VerifyAll all offered.
func (e *engine) verifyHashes(h rs.Hashes) rs.Hashes {
	if e.opt.VerifyAll {
		return h
	}
	// Every token of the strongest algorithm is kept, so that two that
	// contradict each other still fail the install. The callers have
	// checked that all digests decode.
	for _, alg := range [...]string{rs.SHA256, rs.SHA1, rs.MD5} {
		var keep rs.Hashes
		for _, x := range h {
			if rs.CanonicalAlg(x.Alg) == alg {
				keep = append(keep, x)
			}
		}
		if keep != nil {
			return keep
		}
	}
	return h
}
