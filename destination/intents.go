package destination

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"time"

	"github.com/resourcesync-go/resourcesync/destination/dump"
	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/rs"
	bolt "go.etcd.io/bbolt"
)

// Intents are the state's write-ahead record of the files a run may
// install. A file is renamed into place before its record is committed
// (records are committed in batches, after one syncfs): a run killed in
// between leaves a file no record names. Without more, the next run
// could not tell it from a user's file, and kept it for ever once the
// Source no longer listed it (deleted since, or only in a stale Resource
// Dump). So every path a pass may install is first written to the
// intents bucket, in batches committed before any file of the batch is
// renamed; a record's commit removes its path's intent in the same
// transaction, and a pass that ends clears what is left (files it did not
// install). The next run's first act (resolveIntents) turns each intent
// left by a killed run into a record when the file at its path is the
// one the intent describes, and drops it otherwise: every file a killed
// run wrote is then the tool's own, deleted when the Source no longer
// lists it, adopted by its digests when it does.
//
// The cost is one more commit per batch of up to intentBatch installs,
// not one per file; a pass that installs nothing writes no intent.
var bucketIntent = []byte("intents") // relative path → intent

const (
	// intentBatch bounds the jobs of one batch of intents (and so the
	// jobs held between the planner and the workers: about three
	// batches).
	intentBatch = 1024
	// intentEvery is the least time between two commits of intents that
	// are not full batches: the workers wait for a batch at most this
	// long, and a pass whose planner finds little to fetch commits a few
	// small batches a second, not one per file.
	intentEvery = 25 * time.Millisecond
)

// intent is what a run knew of a file it was about to install.
type intent struct {
	uri, set string
	// What the Source said: the hash attribute as written, the length,
	// lastmod and the change's datetime.
	hashes    string
	length    int64
	hasLength bool
	lastMod   time.Time
	changed   time.Time
	// stamp, for an entry without lastmod, is the mtime the install
	// gives the file (pass.stamp): what tells it from a user's file
	// when the Source gives no digest either.
	stamp time.Time
	// prior is the file found at the path before the install (when
	// priorOK): a file that still has its size and mtime was not
	// replaced.
	priorOK              bool
	priorSize, priorTime int64
}

const intentV1 = 0x01

const (
	iHasLength = 1 << iota
	iPrior
	iHasLastMod
	iHasChanged
	iHasStamp
)

// encodeIntent returns the stored form of in:
//
//	0x01 flags uri set hashes [length] [lastmod] [changed] [priorSize priorTime] [stamp]
//
// strings, integers and times as in records (record.go).
func encodeIntent(in *intent) []byte {
	b := make([]byte, 2, 64+len(in.uri)+len(in.hashes))
	b[0] = intentV1
	var flags byte
	b = appendString(b, in.uri)
	b = appendString(b, in.set)
	b = appendString(b, in.hashes)
	if in.hasLength {
		flags |= iHasLength
		b = binary.AppendVarint(b, in.length)
	}
	if !in.lastMod.IsZero() {
		flags |= iHasLastMod
		b = appendTime(b, in.lastMod)
	}
	if !in.changed.IsZero() {
		flags |= iHasChanged
		b = appendTime(b, in.changed)
	}
	if in.priorOK {
		flags |= iPrior
		b = binary.AppendVarint(b, in.priorSize)
		b = binary.AppendVarint(b, in.priorTime)
	}
	if !in.stamp.IsZero() {
		flags |= iHasStamp
		b = appendTime(b, in.stamp)
	}
	b[1] = flags
	return b
}

// decodeIntent reads what encodeIntent wrote.
func decodeIntent(v []byte) (intent, error) {
	var in intent
	if len(v) < 2 || v[0] != intentV1 || v[1]&^(iHasLength|iPrior|iHasLastMod|iHasChanged|iHasStamp) != 0 {
		return in, fmt.Errorf("%w: unknown intent format", errRecord)
	}
	flags := v[1]
	d := recDecoder{b: v[2:]}
	in.uri, in.set, in.hashes = d.str(), d.str(), d.str()
	if flags&iHasLength != 0 {
		in.hasLength, in.length = true, d.varint()
	}
	if flags&iHasLastMod != 0 {
		in.lastMod = d.time()
	}
	if flags&iHasChanged != 0 {
		in.changed = d.time()
	}
	if flags&iPrior != 0 {
		in.priorOK = true
		in.priorSize, in.priorTime = d.varint(), d.varint()
	}
	if flags&iHasStamp != 0 {
		in.stamp = d.time()
	}
	if d.err != nil {
		return intent{}, d.err
	}
	if len(d.b) != 0 {
		return intent{}, fmt.Errorf("%w: %d bytes left over in an intent", errRecord, len(d.b))
	}
	return in, nil
}

// entry returns the Source's entry the intent was written for, as far as
// a file's check needs it.
func (in *intent) entry() (rs.Entry, error) {
	en := rs.Entry{Loc: in.uri}
	en.MD.Length, en.MD.HasLength = in.length, in.hasLength
	if !in.lastMod.IsZero() {
		en.LastMod = rs.NewTime(in.lastMod)
	}
	if !in.changed.IsZero() {
		en.MD.DateTime = rs.NewTime(in.changed)
	}
	if in.hashes != "" {
		h, err := rs.ParseHashes(in.hashes)
		if err != nil {
			return en, err
		}
		en.MD.Hashes = h
	}
	return en, nil
}

// newIntent is the intent for installing en at rel, with the file found
// there now (fi nil: none).
func newIntent(set string, en *rs.Entry, fi fs.FileInfo, stamp time.Time) intent {
	in := intent{uri: en.Loc, set: set, hashes: en.MD.Hashes.String(), length: en.MD.Length, hasLength: en.MD.HasLength,
		lastMod: en.LastMod.Time(), changed: en.MD.DateTime.Time()}
	if in.lastMod.IsZero() {
		in.stamp = stamp
	}
	if fi != nil {
		in.priorOK, in.priorSize, in.priorTime = true, fi.Size(), fi.ModTime().UnixNano()
	}
	return in
}

// putIntents commits intents (path → intent) in one transaction: when it
// returns, they are durable. Fenced as every state write is: a run whose
// lease ended hands no more installs to its workers.
func (s *state) putIntents(keys []string, vals [][]byte) error {
	if len(keys) == 0 {
		return nil
	}
	defer s.rel.touch(s.db, len(keys))
	return s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketIntent)
		b.FillPercent = 0.9
		for i, k := range keys {
			if err := b.Put([]byte(k), vals[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

// clearIntents removes every intent (nothing to do, no commit, when there
// is none).
func (s *state) clearIntents() error {
	empty := true
	if err := s.view(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketIntent); b != nil {
			k, _ := b.Cursor().First()
			empty = k == nil
		}
		return nil
	}); err != nil || empty {
		return err
	}
	return s.update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketIntent); err != nil {
			return err
		}
		_, err := tx.CreateBucket(bucketIntent)
		return err
	})
}

// intentPage reads up to n intents from the first.
func (s *state) intentPage(n int) (keys []string, ins []intent, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketIntent)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.First(); k != nil && len(keys) < n; k, v = c.Next() {
			in, err := decodeIntent(v)
			if err != nil {
				// Damaged: the file it names is left to the
				// rules for files no record names.
				in = intent{}
			}
			keys = append(keys, string(k))
			ins = append(ins, in)
		}
		return nil
	})
	return keys, ins, err
}

// dropIntents removes the intents of keys.
func (s *state) dropIntents(keys []string) error {
	return s.update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketIntent)
		for _, k := range keys {
			if err := b.Delete([]byte(k)); err != nil {
				return err
			}
		}
		return nil
	})
}

// resolveIntents records, as the tool's own, each file a run that did not
// finish installed without recording it, and drops every intent. It
// returns how many files it recorded.
func (e *engine) resolveIntents(ctx context.Context) (int, error) {
	recorded := 0
	for {
		keys, ins, err := e.st.intentPage(1000)
		if err != nil || len(keys) == 0 {
			return recorded, err
		}
		var ops []stateOp
		for i, rel := range keys {
			if err := ctx.Err(); err != nil {
				return recorded, err
			}
			if rec, ok := e.leftByRun(rel, &ins[i]); ok {
				ops = append(ops, stateOp{uri: ins[i].uri, rec: &rec})
			} else if abs := e.m.Path(rel); !e.exists(abs) {
				// Never installed: the directories the run made for it
				// (its temporary file is gone already) go if empty.
				e.removeEmptyParents(abs)
			}
		}
		if err := e.st.apply(ops); err != nil {
			return recorded, err
		}
		recorded += len(ops)
		if err := e.st.dropIntents(keys); err != nil {
			return recorded, err
		}
	}
}

// exists reports whether something is at abs in DEST.
func (e *engine) exists(abs string) bool {
	_, err := e.lstat(abs)
	return !errors.Is(err, fs.ErrNotExist)
}

// leftByRun returns the record of the file at rel when it is the one the
// intent describes: the file there was replaced (or created) since the
// intent was written, and it is the install's: it has the Source's
// digests, or the mtime the install gives a file (the Source's lastmod,
// else the pass's stamp). A length alone does not tell: a user's file
// put there after the kill may have it.
func (e *engine) leftByRun(rel string, in *intent) (Record, bool) {
	if in.uri == "" {
		return Record{}, false
	}
	abs := e.m.Path(rel)
	fi, err := e.lstat(abs)
	if err != nil || !fi.Mode().IsRegular() {
		return Record{}, false // not installed, or removed since
	}
	if in.priorOK && fi.Size() == in.priorSize && fi.ModTime().UnixNano() == in.priorTime {
		return Record{}, false // still the file that was there: not replaced
	}
	en, err := in.entry()
	if err != nil {
		return Record{}, false // never installed: the fetch fails closed on such digests
	}
	status, rec, err := e.verifyLocal(abs, &en)
	if err != nil {
		return Record{}, false
	}
	installMTime := in.lastMod
	if installMTime.IsZero() {
		installMTime = in.stamp
	}
	mtimeIsInstall := !installMTime.IsZero() && e.mtimeIs(rec.MTime, installMTime.UnixNano())
	switch {
	case status == AuditInSync && (len(e.verifyHashes(en.MD.Hashes)) > 0 || mtimeIsInstall):
	case status == AuditUnverifiable && mtimeIsInstall:
	default:
		return Record{}, false // not what the run would have installed: someone else's
	}
	rec.Set, rec.Path = in.set, rel
	fillRemote(&rec, &en)
	if old, ok, err := e.st.get(in.uri); err == nil && ok && old.Path == rel {
		rec.NotOwned = old.NotOwned
	}
	return rec, true
}

// journal is a pass's intent stage: it takes the jobs the planner has
// queued (up to intentBatch), commits their intents, and hands them to
// the workers; then the next batch. The workers go on with the jobs
// already handed while a batch is committed, and the planner fills the
// next batch while one is handed: a baseline commits one batch per
// intentBatch installs. A planner that finds little to fetch would
// commit tiny batches back to back: at most one every intentEvery.
func (p *pass) journal() {
	defer close(p.journalDone)
	var parents fetch.Parents
	defer parents.Close()
	var last time.Time
	batch := make([]job, 0, intentBatch)
	for {
		j, ok := <-p.intents
		if !ok {
			return
		}
		batch = append(batch[:0], j)
		open := p.gather(&batch, time.Until(last.Add(intentEvery)))
		if p.journalErr == nil {
			if err := p.writeIntents(batch, &parents); err != nil {
				// Nothing of the batch may be installed now.
				p.journalErr = fmt.Errorf("%w: %v", ErrState, err)
			}
		}
		last = time.Now()
		if p.journalErr == nil {
			for _, j := range batch {
				select {
				case p.jobs <- j:
				case <-p.ctx.Done(): // the workers drain what they have
				}
			}
		}
		clear(batch) // no entry kept alive by the array
		if !open {
			return
		}
	}
}

// gather adds the jobs queued to batch, up to intentBatch, waiting up to
// wait for more while it is not full. It returns false once the queue is
// closed.
func (p *pass) gather(batch *[]job, wait time.Duration) bool {
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for len(*batch) < intentBatch {
		select {
		case j, ok := <-p.intents:
			if !ok {
				return false
			}
			*batch = append(*batch, j)
			continue
		default:
		}
		if timeout == nil {
			return true
		}
		select {
		case j, ok := <-p.intents:
			if !ok {
				return false
			}
			*batch = append(*batch, j)
		case <-timeout:
			timeout = nil
		}
	}
	return true
}

// writeIntents commits the intents of a batch of jobs, each with the file
// found at its path now.
func (p *pass) writeIntents(batch []job, parents *fetch.Parents) error {
	keys := make([]string, 0, len(batch))
	vals := make([][]byte, 0, len(batch))
	var missing string
	for i := range batch {
		j := &batch[i]
		fi, _ := p.e.prior(j.rel, parents, &missing)
		in := newIntent(p.set, &j.e, fi, p.stamp)
		in.uri = j.uri
		keys = append(keys, j.rel)
		vals = append(vals, encodeIntent(&in))
	}
	return p.e.st.putIntents(keys, vals)
}

// prior returns the file at rel before an install (none: there is
// none). *missing is a directory found missing before: the files of a
// batch come a directory at a time, and in a new directory (a baseline's)
// each lstat would fail on the directory again.
func (e *engine) prior(rel string, parents *fetch.Parents, missing *string) (fi fs.FileInfo, none bool) {
	dir := path.Dir(rel)
	if e.dir == nil || dir == *missing {
		return nil, true
	}
	if e.emptyTarget {
		// Nothing was there when the run began: only an object this run
		// wrote and recorded can be there now (the write's NoReplace
		// refuses anyone else's).
		if owner, err := e.st.pathOwner(rel); err == nil && owner == "" {
			return nil, true
		}
	}
	fi, err := e.dir.LstatIn(e.m.Path(rel), parents)
	if err == nil {
		return fi, false
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	if dir != "." && e.tg == nil { // a Target has no directories
		if _, err := e.dir.LstatIn(e.m.Path(dir), parents); errors.Is(err, fs.ErrNotExist) {
			*missing = dir
		}
	}
	return nil, true
}

// intendPackage commits the intents of a dump package's members before
// any is installed: those whose path has no file now (a member never
// replaces a file).
func (p *pass) intendPackage(ctx context.Context, pkg *dump.Package) error {
	e := p.e
	if e.opt.DryRun || e.st.readOnly {
		return nil
	}
	var keys []string
	var vals [][]byte
	var parents fetch.Parents
	defer parents.Close()
	var missing string
	flush := func() error {
		err := e.st.putIntents(keys, vals)
		keys, vals = keys[:0], vals[:0]
		if err != nil {
			return fmt.Errorf("%w: intents: %v", ErrState, err)
		}
		return nil
	}
	err := pkg.EachEntry(ctx, func(en *rs.Entry) error {
		if en.MD.Change == rs.Deleted {
			return nil
		}
		en.Loc = e.m.Key(en.Loc)
		rel, err := e.resourceRel(en.Loc)
		if err != nil {
			return nil // never installed
		}
		if _, none := e.prior(rel, &parents, &missing); !none {
			return nil // a file (or something) is there: not replaced
		}
		in := newIntent(p.set, en, nil, p.stamp)
		keys = append(keys, rel)
		vals = append(vals, encodeIntent(&in))
		if len(keys) >= commitBatch {
			return flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}
