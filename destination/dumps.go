package destination

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/resourcesync-go/resourcesync/destination/dump"
	"github.com/resourcesync-go/resourcesync/destination/fetch"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/storage"
)

// maxPackageBytes bounds one dump package download (the package's own
// length in the Resource Dump is also enforced).
const maxPackageBytes = 64 << 30

// dumpBaseline installs the resources of the set's Resource Dump. It is a
// head start for a baseline: the Resource List pass that follows skips
// what a package brought and fetches what it did not, so a package that
// fails or is refused costs time, not correctness. Refused packages are
// reported as failures. It returns skipped true when it left the dump
// for the Source's bulk GET, which is faster (Options.PreferDump).
func (e *engine) dumpBaseline(ctx context.Context, s setInfo, sr *SetReport) (skipped bool, err error) {
	d, err := e.open(ctx, s.ResourceDump)
	if err != nil {
		e.phase(s.Name, "Resource Dump unreadable (%v): using the Resource List", err)
		return false, nil
	}
	defer d.Close()
	// Decided on the Resource Dump's response: our Source advertises its
	// bulk GET on every document it answers, and the Resource List is
	// opened only after the dump, so that it is never older than what
	// the dump installed.
	if _, ok := e.bulkOffered(d, s.ResourceList); ok && !e.opt.PreferDump {
		e.phase(s.Name, "Resource Dump not taken: the Source offers its bulk GET, which is faster (--dumps takes the dump)")
		return true, nil
	}
	e.phase(s.Name, "baseline from the Resource Dump %s", s.ResourceDump)
	n := 0
	return false, e.eachEntry(ctx, d, 0, func(pk *rs.Entry) error {
		n++
		return e.installPackage(ctx, s, sr, pk, n)
	})
}

func (e *engine) installPackage(ctx context.Context, s setInfo, sr *SetReport, pk *rs.Entry, n int) error {
	tmp := filepath.Join(e.tmpDir, fmt.Sprintf("package-%d.zip", n))
	e.docs.add(pk.Loc)

	defer os.Remove(tmp)
	if pk.MD.HasLength && pk.MD.Length > maxPackageBytes {
		e.packageFailed(s, sr, pk.Loc, fmt.Errorf("%w: package of %d bytes", dump.ErrTooLarge, pk.MD.Length))
		return nil
	}
	if _, err := rs.DecodeDigests(pk.MD.Hashes); err != nil {
		e.packageFailed(s, sr, pk.Loc, err) // fail closed, as for a resource
		return nil
	}
	res, err := e.f.Fetch(ctx, fetch.Request{URLs: locations(pk), Length: pk.MD.Length, HasLength: pk.MD.HasLength,
		Hashes: e.verifyHashes(pk.MD.Hashes), Path: tmp, Dir: e.local, NoSync: true})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var se *fetch.StatusError
		if errors.As(err, &se) && (se.Code == http.StatusNotFound || se.Code == http.StatusGone) {
			// The Source replaced its dump since the manifest was read: a
			// dump is only a faster start, and the Resource List pass
			// fetches what it would have brought, so DEST can still end in
			// sync. Said, not counted as a failure.
			e.emit(Event{Kind: EventWarning, Set: s.Name, URI: pk.Loc,
				Message: "dump package gone (" + err.Error() + "); its resources are fetched from the Resource List"})
			return nil
		}
		e.packageFailed(s, sr, pk.Loc, err)
		return nil
	}
	pkg, err := dump.Open(tmp, dump.Limits{})
	if err != nil {
		e.packageFailed(s, sr, pk.Loc, err)
		return nil
	}
	defer pkg.Close()
	e.phase(s.Name, "package %s: %d resources, %s", pk.Loc, pkg.Entries(), humanBytes(res.Length))
	p := e.newPass(ctx, s.Name, sr)
	// The members' paths are in the state before the first is
	// installed (intents.go).
	if err := p.intendPackage(ctx, pkg); err != nil {
		ferr := p.finish()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, ErrState):
			return err
		case ferr != nil:
			return ferr
		}
		e.packageFailed(s, sr, pk.Loc, err)
		return nil
	}
	if _, local := e.dir.(localDir); local {
		err = p.extractLocal(ctx, pkg)
	} else {
		err = p.extractTarget(ctx, pkg)
	}
	if ferr := p.finish(); ferr != nil {
		return ferr
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		e.packageFailed(s, sr, pk.Loc, err)
	}
	return nil
}

// memberRel returns where a member goes, or ok false when it is not
// installed from the package (the list pass judges it).
func (p *pass) memberRel(en *rs.Entry) (rel string, ok bool) {
	e := p.e
	if en.MD.Change == rs.Deleted {
		return "", false
	}
	en.Loc = e.m.Key(en.Loc)
	rel, err := e.resourceRel(en.Loc)
	if errors.Is(err, errExcluded) {
		return "", false // the list pass counts it
	}
	if err != nil {
		p.fail(en.Loc, "", rs.Time{}, err)
		return "", false
	}
	if _, err := rs.DecodeDigests(en.MD.Hashes); err != nil {
		return "", false // not trusted; the list pass reports it (or fetches it, if the list's digests are fine)
	}
	return rel, true
}

// extractLocal installs a package's members into a local DEST on a few
// goroutines (two per core, at most maxExtractors), each reading its own share of the members and
// installing each itself, from the package's bytes to the file's final
// name: no member passes between goroutines (a hand-off per member, or
// per batch, cost about as much as the install). Members are shared out
// by directory, so two entries for one path are installed in manifest
// order by one goroutine (the second finds the first's file and leaves
// it to the list pass, as a sequential extraction does), each goroutine
// keeps its directory open (fetch.Parents), and two do not queue on one
// directory's lock.
func (p *pass) extractLocal(ctx context.Context, pkg *dump.Package) error {
	n := min(max(p.e.opt.Workers, 1), 2*runtime.GOMAXPROCS(0), maxExtractors)
	dirs := make([]fetch.Parents, n)
	defer func() {
		for i := range dirs {
			dirs[i].Close()
		}
	}()
	return pkg.EachParallel(ctx, n, func(en *rs.Entry) int {
		// By the directory of the resource's URI as the state keys
		// it: one URI (whatever its spelling) is always one goroutine's.
		h := fnv.New32a()
		h.Write([]byte(path.Dir(p.e.m.Key(en.Loc))))
		return int(h.Sum32() % uint32(n))
	}, func(w int, en rs.Entry, r io.Reader) error {
		if r == nil {
			return nil
		}
		rel, ok := p.memberRel(&en)
		if !ok {
			return nil
		}
		return p.installMember(en, rel, r, &dirs[w])
	})
}

// maxExtractors bounds extractLocal's goroutines. An install is mostly
// the kernel's work (on ext4, most of it finding a free inode), which
// waits now and then (an inode table block, a directory's lock): two
// goroutines per core keep the cores busy meanwhile; more only queue.
const maxExtractors = 4

// extractTarget installs a package's members into a Target: small ones
// by the extractor's workers (a Target's install is a request, mostly
// waiting on the network), large ones streamed by the reading goroutine.
func (p *pass) extractTarget(ctx context.Context, pkg *dump.Package) error {
	e := p.e
	x := newExtractor(e, p)
	err := pkg.Each(ctx, func(en rs.Entry, r io.Reader) error {
		if err := x.stopped(); err != nil {
			return err
		}
		if r == nil {
			return nil
		}
		rel, ok := p.memberRel(&en)
		if !ok {
			return nil
		}
		// A small member is read here (the package's checks: size,
		// CRC-32) and installed by the extractor's workers; a large one
		// streams here.
		bp := memberBufs.Get().(*[]byte)
		defer memberBufs.Put(bp)
		n, rerr := io.ReadFull(r, *bp)
		switch rerr {
		case io.EOF, io.ErrUnexpectedEOF:
			x.submit(en, rel, (*bp)[:n])
			return nil
		case nil:
			// Streamed by this goroutine, after the members queued before
			// it (one may be of the same path).
			x.wait()
			return x.install(en, rel, io.MultiReader(bytes.NewReader((*bp)[:n]), r), nil)
		}
		return rerr // a hostile or corrupt member: refuse the rest of the package
	})
	if xerr := x.finish(); err == nil {
		err = xerr
	}
	return err
}

// smallMember is the largest member a package's reader hands to the
// extractor's workers as bytes; larger ones stream.
const smallMember = 64 << 10

// memberBufs hold a small member (one byte more tells a larger one).
var memberBufs = sync.Pool{New: func() any { b := make([]byte, smallMember+1); return &b }}

// Small members are handed to a worker in batches of up to batchMembers
// members or batchBytes bytes: one hand-off (a goroutine wake-up, two
// futex calls or more) per member cost as much as the member's install.
const (
	batchMembers = 64
	batchBytes   = 256 << 10
)

// member is a small member read whole: data[off:off+n] of its batch.
type member struct {
	en     rs.Entry
	rel    string
	off, n int
}

// memberBatch is members read whole, with their bytes.
type memberBatch struct {
	ms   []member
	data []byte
}

// extractor installs a package's small members on a few goroutines while
// the package is read: an install is mostly system calls, and reading
// the next member (inflate, CRC-32) goes on meanwhile. Members are routed
// by directory (into a Target, by path): two entries for one path are
// installed in manifest order by one goroutine (the second finds the first's file and leaves it to the
// list pass, as a sequential extraction did), and the workers do not
// queue on one directory's lock (a creation and a rename take it) while
// each keeps its directory open (fetch.Parents).
type extractor struct {
	e    *engine
	p    *pass
	chs  []chan *memberBatch
	fill []*memberBatch // the batch being filled for each worker (reading goroutine only)
	wg   sync.WaitGroup
	// pending counts the batches handed over and not yet installed (Add
	// and Wait both on the package's reading goroutine).
	pending sync.WaitGroup
	mu      sync.Mutex
	stop    error
	// byKey routes members by path instead of directory (a Target's).
	byKey bool
}

func newExtractor(e *engine, p *pass) *extractor {
	n := min(max(e.opt.Workers, 1), 4)
	_, local := e.dir.(localDir)
	if !local {
		// A Target's install is a request (a PUT), mostly waiting on
		// the network: as many at a time as the sync's downloads, and
		// members routed by key, since a Target has no directory to
		// keep open or to queue on.
		n = max(e.opt.Workers, 1)
	}
	x := &extractor{e: e, p: p, fill: make([]*memberBatch, n), byKey: !local}
	for range n {
		ch := make(chan *memberBatch, 1)
		x.chs = append(x.chs, ch)
		x.wg.Add(1)
		go func() {
			defer x.wg.Done()
			var dirs fetch.Parents // members come sorted: mostly one directory after another
			defer dirs.Close()
			for b := range ch {
				for _, m := range b.ms {
					if x.stopped() != nil {
						break
					}
					if err := x.install(m.en, m.rel, bytes.NewReader(b.data[m.off:m.off+m.n]), &dirs); err != nil {
						x.mu.Lock()
						if x.stop == nil {
							x.stop = err
						}
						x.mu.Unlock()
					}
				}
				x.pending.Done()
			}
		}()
	}
	return x
}

// submit queues a small member; data is copied.
func (x *extractor) submit(en rs.Entry, rel string, data []byte) {
	h := fnv.New32a()
	if x.byKey {
		h.Write([]byte(rel))
	} else {
		h.Write([]byte(path.Dir(rel)))
	}
	i := h.Sum32() % uint32(len(x.chs))
	b := x.fill[i]
	if b == nil {
		b = &memberBatch{data: make([]byte, 0, batchBytes)}
		x.fill[i] = b
	}
	b.ms = append(b.ms, member{en: en, rel: rel, off: len(b.data), n: len(data)})
	b.data = append(b.data, data...)
	if len(b.ms) >= batchMembers || len(b.data) >= batchBytes {
		x.hand(int(i))
	}
}

// hand gives worker i the batch filled for it.
func (x *extractor) hand(i int) {
	if b := x.fill[i]; b != nil && len(b.ms) > 0 {
		x.pending.Add(1)
		x.chs[i] <- b
		x.fill[i] = nil
	}
}

// wait hands over every batch and waits until all are installed.
func (x *extractor) wait() {
	for i := range x.fill {
		x.hand(i)
	}
	x.pending.Wait()
}

// stopped returns the error that refuses the rest of the package, if any.
func (x *extractor) stopped() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.stop
}

// finish installs what is queued, waits for the workers and returns what
// stopped them.
func (x *extractor) finish() error {
	for i := range x.fill {
		x.hand(i)
	}
	for _, ch := range x.chs {
		close(ch)
	}
	x.wg.Wait()
	return x.stop
}

// install installs one member's bytes. A non-nil error refuses the rest
// of the package.
func (x *extractor) install(en rs.Entry, rel string, r io.Reader, dirs *fetch.Parents) error {
	return x.p.installMember(en, rel, r, dirs)
}

// installMember installs one member's bytes. A non-nil error refuses the
// rest of the package.
func (p *pass) installMember(en rs.Entry, rel string, r io.Reader, dirs *fetch.Parents) error {
	e := p.e
	// Nothing is replaced: a file there is one the state does not name
	// (a baseline from a dump starts with none of the set's), which the
	// list pass judges.
	req := fetch.Request{Path: e.m.Path(rel), Length: en.MD.Length, HasLength: en.MD.HasLength,
		Hashes: e.verifyHashes(en.MD.Hashes), ModTime: p.installTime(&en), NoSync: !e.opt.FsyncEach, NoReplace: true, Parents: dirs}
	if ld, ok := e.dir.(localDir); ok {
		req.Dir = ld.Dir
	} else {
		_, canSync := e.tg.(storage.Syncer)
		req.Target, req.Key, req.Path, req.Parents, req.NoSync = e.tg, rel, "", nil, req.NoSync && canSync
		req.ContentType = en.MD.Type
	}
	res, err := fetch.InstallContext(p.ctx, r, req)
	if err != nil {
		if errors.Is(err, fetch.ErrExists) {
			return nil
		}
		if errors.Is(err, fetch.ErrSymlinkInDest) {
			return nil // the list pass reports it as this resource's failure
		}
		if errors.Is(err, fetch.ErrHashMismatch) || errors.Is(err, fetch.ErrLengthMismatch) {
			// The list pass fetches it again.
			e.emit(Event{Kind: EventRetry, Set: p.set, URI: en.Loc, Path: rel, Error: "in dump package: " + err.Error()})
			return nil
		}
		return err // a hostile or corrupt member, or DEST cannot be written
	}
	p.installed(job{uri: en.Loc, rel: rel, e: en}, res)
	p.count(func(sr *SetReport) { sr.FromDump++; sr.DumpBytes += res.Length })
	return nil
}

func (e *engine) packageFailed(s setInfo, sr *SetReport, loc string, err error) {
	sr.Failed++
	if len(sr.Failures) < maxFailuresListed {
		sr.Failures = append(sr.Failures, failure(loc, "", "dump package refused: "+err.Error()))
	}
	e.emit(Event{Kind: EventFailed, Set: s.Name, URI: loc, Error: "dump package refused: " + err.Error() + " (its resources are fetched from the Resource List)"})
}
