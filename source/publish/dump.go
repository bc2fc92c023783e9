package publish

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/scan"
	"github.com/resourcesync-go/resourcesync/source/store"
)

const (
	metaResourceDump = "publish.resourcedump"
	metaChangeDumps  = "publish.changedumps"
	// metaChangeDumpArchiveBase is the BaseURL the Change Dump Archive's
	// per-package Change Dumps were written under.
	metaChangeDumpArchiveBase = "publish.changedump-archive.base"
	zipType                   = "application/zip"
)

// pkgInfo describes one written package.
type pkgInfo struct {
	Name       string    // file name without extension, in its directory
	From       time.Time `json:",omitzero"` // change dump packages
	Until      time.Time `json:",omitzero"`
	Length     int64
	SHA256     string `json:",omitempty"` // "" for a package produced on demand
	Bitstreams int
	// A package produced on demand (Config.DumpsOnDemand): the digest of
	// its manifest, and where its items are: a Resource Dump package's
	// first path and count in the inventory, a Change Dump package's
	// journal records.
	Manifest string `json:",omitempty"`
	First    string `json:",omitempty"`
	Count    int    `json:",omitempty"`
	FirstSeq uint64 `json:",omitempty"`
	LastSeq  uint64 `json:",omitempty"`
	// Dropped: an on-demand Change Dump package that can no longer be
	// produced as planned (a resource of its list changed again since);
	// it is no longer listed nor served.
	Dropped bool `json:",omitempty"`
}

type rdState struct {
	Version dumpVersion // of the collection the dump was made from
	// Locs names the URLs the dump's manifests use (the Source's base and
	// the set's resource base): a dump made under other URLs is rebuilt
	// whatever its age, its locs would be outside the Source.
	Locs  string `json:",omitempty"`
	At    time.Time
	Gen   string
	Parts []pkgInfo
	// OnDemand: the packages are not files, Dumps serves them.
	OnDemand bool `json:",omitempty"`
	// PlanTook is how long the on-demand plan took to make (replanAge).
	PlanTook time.Duration `json:",omitempty"`
	// Completed is when the last package was written (rs:md completed in
	// the Resource Dump Archive).
	Completed time.Time `json:",omitzero"`
	// Archive names the previous written generations the Resource Dump
	// Archive lists (Config.Archives), oldest first: they are kept.
	Archive []rdGen `json:",omitempty"`
}

// rdGen is an archived Resource Dump: its generation directory holds its
// packages and its own copy of the Resource Dump document.
type rdGen struct {
	Gen           string
	At, Completed time.Time
}

type cdState struct {
	Packages []pkgInfo // chronological
	// Checked is the journal seq up to which the changes were checked
	// against the on-demand packages (stale ones are Dropped).
	Checked uint64 `json:",omitempty"`
}

// safePath reports whether a store path can name a file inside a package
// and the collection: no empty, "." or ".." segment.
func safePath(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// dumpItem is one manifest entry of a package: a resource of the
// inventory or a journal record, and the bitstream it names unless it is
// a deletion. Entries are built only while the manifest is written, so a
// package of MaxEntries items holds little memory.
type dumpItem struct {
	c    store.Change // Seq, Kind and Time are zero for a Resource Dump item
	file bool         // has a bitstream
}

// pkgKind builds the manifest entries and bitstream names of one kind of
// package.
type pkgKind struct {
	s      *Set
	change bool // Change Dump: entries carry the change; paths /changes/<seq>/...
}

// zipName returns the name of an item's bitstream in the package: its
// manifest path without the leading "/".
func (k pkgKind) zipName(it *dumpItem) string {
	if k.change {
		return cdPath(&it.c)[1:]
	}
	return "resources/" + scan.EscapePath(it.c.Resource.Path)
}

func (k pkgKind) entry(it *dumpItem) rs.Entry {
	var e rs.Entry
	if k.change {
		e = changeEntry(k.s, &it.c)
	} else {
		e = resourceEntry(k.s, &it.c.Resource)
	}
	if it.file {
		e.MD.Path = "/" + k.zipName(it)
	}
	return e
}

// errWritePkg marks the errors of writing a package, to tell them from
// the errors of reading a resource.
type writeErr struct{ err error }

func (e *writeErr) Error() string { return e.err.Error() }

type errWriter struct{ w io.Writer }

func (e errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil {
		err = &writeErr{err}
	}
	return n, err
}

// writePackage writes the package dir/<name>.zip (manifest.xml first, then
// the bitstreams, stored: already-compressed or random bytes gain nothing
// from deflate, and it is the most expensive part of a dump) and the copy
// of its manifest dir/<name>.manifest.xml, in one pass over the resources:
// each bitstream is verified against the inventory's length and sha-256
// while it is copied. A bitstream that cannot be read or no longer matches
// is left out (logged, counted in skipped) and the package is written
// again without it, so a package never lists what it does not hold (a
// rare case: the file changed since the scan). It reports false when no
// item is left.
func (p *publisher) writePackage(k pkgKind, dir, name string, h *rs.Head, items []dumpItem, skipped *int, buf []byte) (pkgInfo, bool, error) {
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return pkgInfo{}, false, fmt.Errorf("publish: %w", err)
	}
	for {
		if len(items) == 0 {
			return pkgInfo{}, false, nil
		}
		info, bad, err := p.tryPackage(k, dir, name, h, items, buf)
		if err != nil || len(bad) == 0 {
			return info, err == nil, err
		}
		kept := items[:0]
		j := 0
		for i := range items {
			if j < len(bad) && bad[j] == i {
				j++
				*skipped++
				continue
			}
			kept = append(kept, items[i])
		}
		items = kept
	}
}

// tryPackage writes the package of items, or returns the indexes of the
// items whose bitstreams fail verification (once one fails, the others
// are only verified, not written).
func (p *publisher) tryPackage(k pkgKind, dir, name string, h *rs.Head, items []dumpItem, buf []byte) (pkgInfo, []int, error) {
	info := pkgInfo{Name: name}
	zf, err := createAtomic(filepath.Join(dir, name+".zip"), true)
	if err != nil {
		return info, nil, err
	}
	mf, err := createAtomic(filepath.Join(dir, name+".manifest.xml"), false)
	if err != nil {
		zf.abort()
		return info, nil, err
	}
	fail := func(err error) (pkgInfo, []int, error) {
		zf.abort()
		mf.abort()
		return info, nil, err
	}
	zw := zip.NewWriter(zf)
	mod := h.MD.At.Time()
	if mod.IsZero() {
		mod = h.MD.Until.Time()
	}
	mw, err := zw.CreateHeader(&zip.FileHeader{Name: "manifest.xml", Method: zip.Store, Modified: mod})
	if err != nil {
		return fail(fmt.Errorf("publish: package %s: %w", name, err))
	}
	err = encodeDoc(io.MultiWriter(mw, mf), name+".manifest.xml", h, func(emit func(*rs.Entry) error) error {
		for i := range items {
			e := k.entry(&items[i])
			if err := emit(&e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	var bad []int
	hs := sha256.New()
	reads := p.prefetch(k, items)
	defer reads.stop()
	for sl := range reads.slots {
		res := <-sl.res
		i := sl.i
		it := &items[i]
		r := &it.c.Resource
		if res.bad != "" {
			p.log.Warn("publish: dump: resource left out: "+res.bad, "path", r.Path, "err", res.err)
			bad = append(bad, i)
			continue
		}
		if !res.large {
			if bad == nil {
				zh := &zip.FileHeader{Name: k.zipName(it), Method: zip.Store, Modified: r.LastMod}
				w, err := zw.CreateHeader(zh)
				if err == nil {
					_, err = w.Write(res.b)
				}
				if err != nil {
					return fail(fmt.Errorf("publish: package %s: %w", name, err))
				}
			}
			info.Bitstreams++
			continue
		}
		// A large file: streamed and verified here.
		f, why, err := openScanned(k.s, r)
		if why != "" {
			p.log.Warn("publish: dump: resource left out: "+why, "path", r.Path, "err", err)
			bad = append(bad, i)
			continue
		}
		var w io.Writer = io.Discard
		if bad == nil {
			zh := &zip.FileHeader{Name: k.zipName(it), Method: zip.Store, Modified: r.LastMod}
			if w, err = zw.CreateHeader(zh); err != nil {
				f.Close()
				return fail(fmt.Errorf("publish: package %s: %w", name, err))
			}
			w = errWriter{w}
		}
		hs.Reset()
		n, err := io.CopyBuffer(io.MultiWriter(w, hs), struct{ io.Reader }{io.LimitReader(f, r.Size+1)}, buf)
		f.Close()
		var werr *writeErr
		switch {
		case errors.As(err, &werr):
			return fail(werr.err)
		case err != nil:
			p.log.Warn("publish: dump: resource left out: read error", "path", r.Path, "err", err)
		case n != r.Size || !bytes.Equal(hs.Sum(buf[:0:0]), r.SHA256[:]):
			p.log.Warn("publish: dump: resource left out: bytes changed since scanned", "path", r.Path)
			err = errors.New("changed")
		}
		if err != nil {
			bad = append(bad, i)
			continue
		}
		info.Bitstreams++
	}
	if bad != nil {
		zf.abort()
		mf.abort()
		return info, bad, nil
	}
	if err := zw.Close(); err != nil {
		return fail(fmt.Errorf("publish: package %s: %w", name, err))
	}
	if err := zf.finish(); err != nil {
		return fail(err)
	}
	// The manifest copy first: the package's entry links to it.
	if err := mf.commit(); err != nil {
		zf.abort()
		return info, nil, err
	}
	length, sum := zf.digest()
	info.Length, info.SHA256 = length, hex.EncodeToString(sum)
	return info, nil, zf.commit()
}

// maxPackageEntries caps the resources of one Resource Dump package: a
// package's records and the ZIP writer's central directory are held in
// memory until it is complete (about 400 bytes a resource), so this keeps
// a dump's memory the same at 20,000 and at 10 million resources.
const maxPackageEntries = 10000

// smallFile is the largest bitstream read ahead, whole, into memory.
const smallFile = 256 << 10

// readAhead is how many bitstreams may be read ahead of the writer (at
// most readAhead * smallFile bytes in memory).
const readAhead = 64

// fetched is the outcome of reading one bitstream ahead.
type fetched struct {
	b     []byte // the verified bytes of a small file
	large bool   // not read ahead: the writer streams it
	bad   string // why it is left out, "" if it is not
	err   error
}

type slot struct {
	i   int
	res chan fetched
}

// prefetcher reads the small bitstreams of a package ahead of the writer,
// in parallel (opening, reading and hashing many small files is most of a
// dump's cost; writing the package goes on meanwhile on another core).
// Results come out of slots in item order.
type prefetcher struct {
	slots chan slot
	quit  chan struct{}
	wg    sync.WaitGroup
}

func (p *publisher) prefetch(k pkgKind, items []dumpItem) *prefetcher {
	pf := &prefetcher{slots: make(chan slot, readAhead), quit: make(chan struct{})}
	jobs := make(chan slot)
	workers := min(max(runtime.GOMAXPROCS(0), 2), 4)
	pf.wg.Add(1 + workers)
	go func() {
		defer pf.wg.Done()
		defer close(pf.slots)
		defer close(jobs)
		for i := range items {
			if !items[i].file {
				continue
			}
			sl := slot{i: i, res: make(chan fetched, 1)}
			select {
			case pf.slots <- sl:
			case <-pf.quit:
				return
			}
			select {
			case jobs <- sl:
			case <-pf.quit:
				return
			}
		}
	}()
	for range workers {
		go func() {
			defer pf.wg.Done()
			h := sha256.New()
			for sl := range jobs {
				sl.res <- readSmall(k, &items[sl.i].c.Resource, h)
			}
		}()
	}
	return pf
}

// stop ends the read-ahead (early, when the package fails) and waits for
// its goroutines.
func (pf *prefetcher) stop() {
	close(pf.quit)
	for range pf.slots {
	}
	pf.wg.Wait()
}

// readSmall reads and verifies a small bitstream; a larger one is left to
// the writer.
func readSmall(k pkgKind, r *store.Resource, h hash.Hash) fetched {
	if r.Size > smallFile {
		return fetched{large: true}
	}
	f, why, err := openScanned(k.s, r)
	if why != "" {
		return fetched{bad: why, err: err}
	}
	defer f.Close()
	b := make([]byte, r.Size+1) // one more byte: a file that grew is seen
	n, err := io.ReadFull(f, b)
	if err != io.ErrUnexpectedEOF && err != nil && err != io.EOF {
		return fetched{bad: "read error", err: err}
	}
	b = b[:n]
	h.Reset()
	h.Write(b)
	if int64(n) != r.Size || !bytes.Equal(h.Sum(nil), r.SHA256[:]) {
		return fetched{bad: "bytes changed since scanned"}
	}
	return fetched{b: b}
}

// dumpEntry returns the Resource Dump or Change Dump entry of a package.
func (p *publisher) dumpEntry(rel string, pk *pkgInfo) rs.Entry {
	e := rs.Entry{Loc: p.url(rel + ".zip"),
		MD:    rs.Metadata{Type: zipType, Length: pk.Length, HasLength: true},
		Links: []rs.Link{{Rel: rs.RelContents, Href: p.url(rel + ".manifest.xml"), Type: "application/xml"}}}
	if pk.SHA256 != "" {
		// A package produced on demand has none: its digest would take
		// reading every file; its length is exact and its manifest
		// carries each resource's digests.
		e.MD.Hashes = rs.Hashes{{Alg: rs.SHA256, Value: pk.SHA256}}
	}
	return e
}

// dumpVersion identifies the state of the collection a Resource Dump was
// made from without a pass over it: every change after the baseline is a
// journal record, so the journal's last seq, the baseline and the count
// tell an unchanged collection from a changed one (stat-only updates
// change no published field).
type dumpVersion struct {
	Seq      uint64
	Baseline string
	Count    int
}

func currentVersion(ctx context.Context, st store.Store) (dumpVersion, error) {
	ss, err := st.Stats(ctx)
	if err != nil {
		return dumpVersion{}, err
	}
	v := dumpVersion{Seq: ss.LastSeq, Count: ss.Resources}
	if b, err := st.GetMeta(ctx, store.MetaBaseline); err == nil {
		v.Baseline = string(b)
	} else if !errors.Is(err, store.ErrNotFound) {
		return v, err
	}
	return v, nil
}

// resourceDump writes a new Resource Dump when there is none, or when the
// collection changed since the last one and that one is at least
// DumpInterval old. Packages go to a new generation directory, the
// Resource Dump document is renamed into place after them, and older
// generations are removed last.
func (p *publisher) resourceDump(ctx context.Context, s *Set, sr *SetReport) error {
	var old rdState
	had, err := getMeta(ctx, s.Store, metaResourceDump, &old)
	if err != nil {
		return err
	}
	ver, err := currentVersion(ctx, s.Store)
	if err != nil {
		return fmt.Errorf("resource dump: %w", err)
	}
	gensRel := setDoc(s.Name, "resourcedumps")
	locs := p.cfg.BaseURL + " " + s.ResourceBase + " " + fmt.Sprint(s.Loc != nil)
	if p.cfg.DumpsOnDemand {
		return p.resourceDumpPlan(ctx, s, sr, &old, had, ver, locs)
	}
	if had && !old.OnDemand && old.complete(p, gensRel) && old.Locs == locs && (old.Version == ver || p.now.Sub(old.At) < p.cfg.DumpInterval) {
		// The published document may be a killed run's: write the one
		// the meta describes before removing what it does not name.
		if err := p.writeResourceDumpDoc(s, &old); err != nil {
			return err
		}
		return removeExcept(p.file(gensRel), old.keep())
	}
	at := p.now
	gen := compact(at)
	for i := 1; gen == old.Gen || exists(p.file(gensRel+"/"+gen)); i++ {
		gen = fmt.Sprintf("%s-%d", compact(at), i)
	}
	dir := p.file(gensRel + "/" + gen)
	if err := os.MkdirAll(dir, dirPerm); err != nil { // also for an empty dump
		return fmt.Errorf("publish: %w", err)
	}
	st := rdState{Version: ver, At: at, Gen: gen, Locs: locs}
	if p.archiveResourceDumps() && had && !old.OnDemand && old.Locs == locs {
		// The previous written dump is archived if its own document is
		// there (a dump written before Archives was on has none), and if
		// it names the same URLs (a dump of another base URL is not kept).
		st.Archive = old.Archive
		if old.Gen != "" && old.complete(p, gensRel) && exists(p.file(rdGenDoc(s.Name, old.Gen))) {
			st.Archive = append(st.Archive, rdGen{Gen: old.Gen, At: old.At, Completed: old.Completed})
		}
		if n := len(st.Archive) - p.cfg.ArchivedResourceDumps; n > 0 {
			st.Archive = st.Archive[n:]
		}
	}
	mhead := rs.Head{MD: rs.Metadata{Capability: rs.CapResourceDumpManifest, At: rs.NewTime(at)},
		Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)}}}
	var (
		batch  []dumpItem
		nbytes int64
		buf    = make([]byte, 1<<20)
	)
	flush := func() error {
		name := fmt.Sprintf("part-%05d", len(st.Parts)+1)
		info, ok, err := p.writePackage(pkgKind{s: s}, dir, name, &mhead, batch, &sr.SkippedBitstreams, buf)
		batch, nbytes = batch[:0], 0
		if err != nil || !ok {
			return err
		}
		st.Parts = append(st.Parts, info)
		sr.DumpBytes += info.Length
		return nil
	}
	// Paged reads: no read transaction is held while the files are read.
	for r, err := range s.Store.ResourcesIn(ctx, "", "") {
		if err != nil {
			return fmt.Errorf("resource dump: %w", err)
		}
		if !safePath(r.Path) {
			p.log.Warn("publish: dump: resource left out: unsafe path", "path", r.Path)
			sr.SkippedBitstreams++
			continue
		}
		if len(batch) > 0 && (len(batch) >= min(p.cfg.MaxEntries, maxPackageEntries) || nbytes+r.Size > p.cfg.DumpPartBytes) {
			if err := flush(); err != nil {
				return err
			}
		}
		batch = append(batch, dumpItem{c: store.Change{Resource: r}, file: true})
		nbytes += r.Size
	}
	if len(batch) > 0 {
		if err := flush(); err != nil {
			return err
		}
	}
	st.Completed = p.cfg.Now().UTC()
	if st.Completed.Before(at) {
		st.Completed = at
	}
	// The meta first: from now on a rerun writes the document naming the
	// new generation, and removes the others only after that.
	if err := putMeta(ctx, s.Store, metaResourceDump, st); err != nil {
		return err
	}
	if err := p.writeResourceDumpDoc(s, &st); err != nil {
		return err
	}
	sr.ResourceDump, sr.DumpParts = true, len(st.Parts)
	p.log.Info("publish: resource dump", "set", s.Name, "packages", len(st.Parts), "bytes", sr.DumpBytes)
	return removeExcept(p.file(gensRel), st.keep())
}

// keep returns the generation directories the dump st names: its own and
// the archived ones.
func (st *rdState) keep() map[string]bool {
	k := map[string]bool{st.Gen: true}
	for _, g := range st.Archive {
		k[g.Gen] = true
	}
	return k
}

// archiveDumps reports whether the dump archives are written: with
// Archives and written dumps. Dumps on demand are not archived: their
// packages are not files but plans of the current collection, and an
// earlier plan's packages answer 404 once the collection changed, so
// there is nothing earlier to list.
func (p *publisher) archiveDumps() bool {
	return p.cfg.Archives && p.cfg.Dumps && !p.cfg.DumpsOnDemand
}

// archiveResourceDumps reports whether the Resource Dump Archive is
// written: archiveDumps, and previous dumps are kept.
func (p *publisher) archiveResourceDumps() bool {
	return p.archiveDumps() && p.cfg.ArchivedResourceDumps > 0
}

// rdGenDoc is the path of generation gen's own Resource Dump document.
func rdGenDoc(set, gen string) string { return setDoc(set, "resourcedumps/"+gen+"/resourcedump.xml") }

// cdDoc is the path of the single-package Change Dump of closed list name,
// which the Change Dump Archive lists.
func cdDoc(set, name string) string { return setDoc(set, "changedumps/"+name+".changedump.xml") }

// complete reports whether every package of the dump st describes exists.
func (st *rdState) complete(p *publisher, gensRel string) bool {
	if st.Gen == "" || !exists(p.file(gensRel+"/"+st.Gen)) {
		return false
	}
	for _, pk := range st.Parts {
		if !exists(p.file(gensRel + "/" + st.Gen + "/" + pk.Name + ".zip")) {
			return false
		}
	}
	return true
}

// writeResourceDumpDoc writes the Resource Dump document of st.
func (p *publisher) writeResourceDumpDoc(s *Set, st *rdState) error {
	genRel := setDoc(s.Name, "resourcedumps/"+st.Gen)
	at := rs.NewTime(st.At)
	h := rs.Head{MD: rs.Metadata{Capability: rs.CapResourceDump, At: at},
		Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)}}}
	if !st.Completed.IsZero() {
		h.MD.Completed = rs.NewTime(st.Completed)
	}
	archive := p.archiveResourceDumps() && !st.OnDemand
	if archive {
		h.Links = append(h.Links, rs.Link{Rel: rs.RelArchives, Href: p.url(setDoc(s.Name, "resourcedump-archive.xml"))})
	}
	top := p.file(setDoc(s.Name, "resourcedump.xml"))
	path := top
	if archive {
		// The archive first: the documents link to it.
		if err := p.writeResourceDumpArchive(s, st.Archive); err != nil {
			return err
		}
		// The generation's own copy first (the URL the archive will name
		// once a newer dump replaces this one), then the stable name.
		path = p.file(rdGenDoc(s.Name, st.Gen))
	}
	err := writeDocSeq(path, &h, func(emit func(*rs.Entry) error) error {
		for i := range st.Parts {
			e := p.dumpEntry(genRel+"/"+st.Parts[i].Name, &st.Parts[i])
			e.MD.At = at
			if err := emit(&e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || !archive {
		return err
	}
	return copyAtomic(path, top)
}

// writeResourceDumpArchive writes the Resource Dump Archive: one entry per
// archived generation, oldest first, with its at and completed.
func (p *publisher) writeResourceDumpArchive(s *Set, gens []rdGen) error {
	h := rs.Head{MD: rs.Metadata{Capability: rs.CapResourceDumpArchive},
		Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)}}}
	return writeDocSeq(p.file(setDoc(s.Name, "resourcedump-archive.xml")), &h, func(emit func(*rs.Entry) error) error {
		for _, g := range gens {
			if !exists(p.file(rdGenDoc(s.Name, g.Gen))) {
				continue // written into another output tree
			}
			e := rs.Entry{Loc: p.url(rdGenDoc(s.Name, g.Gen)), MD: rs.Metadata{At: rs.NewTime(g.At)}}
			if !g.Completed.IsZero() {
				e.MD.Completed = rs.NewTime(g.Completed)
			}
			if err := emit(&e); err != nil {
				return err
			}
		}
		return nil
	})
}

// changeDumps writes a Change Dump package for every closed Change List
// that has none, then the Change Dump document naming all packages.
func (p *publisher) changeDumps(ctx context.Context, s *Set, closed []clList, sr *SetReport) error {
	if p.cfg.DumpsOnDemand {
		return p.changeDumpsPlan(ctx, s, closed, sr)
	}
	var st cdState
	if _, err := getMeta(ctx, s.Store, metaChangeDumps, &st); err != nil {
		return err
	}
	dirRel := setDoc(s.Name, "changedumps")
	have := map[string]bool{}
	for _, pk := range st.Packages {
		if exists(p.file(dirRel + "/" + pk.Name + ".zip")) {
			have[pk.Name] = true
		}
	}
	var pkgs []pkgInfo
	for i := range closed {
		l := &closed[i]
		if have[l.name()] {
			for _, pk := range st.Packages {
				if pk.Name == l.name() {
					pkgs = append(pkgs, pk)
				}
			}
			continue
		}
		info, err := p.changeDump(ctx, s, l, sr)
		if err != nil {
			return err
		}
		pkgs = append(pkgs, info)
		st.Packages = pkgs
		if err := putMeta(ctx, s.Store, metaChangeDumps, st); err != nil {
			return err
		}
		sr.ChangeDumps++
	}
	st.Packages = pkgs
	return p.writeChangeDumpDoc(ctx, s, closed, pkgs)
}

// writeChangeDumpDoc writes the Change Dump document naming pkgs.
func (p *publisher) writeChangeDumpDoc(ctx context.Context, s *Set, closed []clList, pkgs []pkgInfo) error {
	dirRel := setDoc(s.Name, "changedumps")
	from := p.now
	if len(closed) > 0 {
		from = closed[0].From
	} else {
		var cl clState
		if _, err := getMeta(ctx, s.Store, metaChangeLists, &cl); err != nil {
			return err
		}
		from = cl.Open.From
	}
	h := rs.Head{MD: rs.Metadata{Capability: rs.CapChangeDump, From: rs.NewTime(from)},
		Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)}}}
	archive := p.archiveDumps()
	if archive {
		if err := p.writeChangeDumpArchive(ctx, s, pkgs); err != nil {
			return err
		}
		h.Links = append(h.Links, rs.Link{Rel: rs.RelArchives, Href: p.url(setDoc(s.Name, "changedump-archive.xml"))})
	}
	return writeDocSeq(p.file(setDoc(s.Name, "changedump.xml")), &h, func(emit func(*rs.Entry) error) error {
		for i := range pkgs {
			e := p.dumpEntry(dirRel+"/"+pkgs[i].Name, &pkgs[i])
			e.MD.From, e.MD.Until = rs.NewTime(pkgs[i].From), rs.NewTime(pkgs[i].Until)
			if err := emit(&e); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeChangeDumpArchive writes, for each Change Dump package (one per
// closed Change List, never removed), a Change Dump naming it alone with
// the list's from and until (once: its bytes follow from the package's
// record, which does not change), then the Change Dump Archive listing
// those documents in chronological order (the most recent
// rs.MaxEntries), as the Change List Archive lists the closed lists.
func (p *publisher) writeChangeDumpArchive(ctx context.Context, s *Set, pkgs []pkgInfo) error {
	dirRel := setDoc(s.Name, "changedumps")
	// The documents name URLs under BaseURL: they are written again, all,
	// when it is not the one they were written under.
	base, err := s.Store.GetMeta(ctx, metaChangeDumpArchiveBase)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("change dump archive: %w", err)
	}
	again := string(base) != p.cfg.BaseURL
	if len(pkgs) > rs.MaxEntries {
		pkgs = pkgs[len(pkgs)-rs.MaxEntries:]
	}
	for i := range pkgs {
		pk := &pkgs[i]
		f := p.file(cdDoc(s.Name, pk.Name))
		if !again && exists(f) {
			continue
		}
		h := rs.Head{MD: rs.Metadata{Capability: rs.CapChangeDump, From: rs.NewTime(pk.From), Until: rs.NewTime(pk.Until)},
			Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)},
				{Rel: rs.RelArchives, Href: p.url(setDoc(s.Name, "changedump-archive.xml"))}}}
		e := p.dumpEntry(dirRel+"/"+pk.Name, pk)
		e.MD.From, e.MD.Until = rs.NewTime(pk.From), rs.NewTime(pk.Until)
		if err := writeDoc(f, &h, []rs.Entry{e}); err != nil {
			return fmt.Errorf("change dump %s: %w", pk.Name, err)
		}
	}
	if again {
		if err := s.Store.PutMeta(ctx, metaChangeDumpArchiveBase, []byte(p.cfg.BaseURL)); err != nil {
			return fmt.Errorf("change dump archive: %w", err)
		}
	}
	h := rs.Head{MD: rs.Metadata{Capability: rs.CapChangeDumpArchive},
		Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)}}}
	return writeDocSeq(p.file(setDoc(s.Name, "changedump-archive.xml")), &h, func(emit func(*rs.Entry) error) error {
		for i := range pkgs {
			e := rs.Entry{Loc: p.url(cdDoc(s.Name, pkgs[i].Name)),
				MD: rs.Metadata{From: rs.NewTime(pkgs[i].From), Until: rs.NewTime(pkgs[i].Until)}}
			if err := emit(&e); err != nil {
				return err
			}
		}
		return nil
	})
}

// changeDump writes the package of closed list l: a bitstream per created
// or updated record whose resource still has the bytes the record names.
func (p *publisher) changeDump(ctx context.Context, s *Set, l *clList, sr *SetReport) (pkgInfo, error) {
	var items []dumpItem // at most MaxEntries: a list closes when it has that many
	err := journalRange(ctx, s.Store, l.First, l.Next-1, func(c *store.Change) error {
		if c.Kind == rs.Deleted {
			items = append(items, dumpItem{c: *c})
			return nil
		}
		if !safePath(c.Path()) {
			p.log.Warn("publish: change dump: bitstream left out: unsafe path", "path", c.Path())
			sr.SkippedBitstreams++
			return nil
		}
		items = append(items, dumpItem{c: *c, file: true})
		return nil
	})
	if err != nil {
		return pkgInfo{}, fmt.Errorf("change dump %s: %w", l.name(), err)
	}
	h := rs.Head{MD: rs.Metadata{Capability: rs.CapChangeDumpManifest, From: rs.NewTime(l.From), Until: rs.NewTime(l.Until)},
		Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)}}}
	k := pkgKind{s: s, change: true}
	info, ok, err := p.writePackage(k, p.file(setDoc(s.Name, "changedumps")), l.name(), &h, items, &sr.SkippedBitstreams, make([]byte, 1<<20))
	if err == nil && !ok {
		// Every record was left out: an empty package still marks the
		// list as done and keeps the packages contiguous.
		info, _, err = p.tryPackage(k, p.file(setDoc(s.Name, "changedumps")), l.name(), &h, nil, nil)
	}
	info.From, info.Until = l.From, l.Until
	return info, err
}

// cdPath is the manifest path of a change's bitstream: one directory per
// journal record, so that several changes of one resource do not collide.
func cdPath(c *store.Change) string {
	return fmt.Sprintf("/changes/%d/%s", c.Seq, scan.EscapePath(c.Path()))
}

// openScanned opens r's bytes for a written dump package: Dir/<path>, or
// the object in s.Content. why says why it cannot be used ("" when f is
// open): it cannot be opened, or its size is not the scanned one.
func openScanned(s *Set, r *store.Resource) (f io.ReadCloser, why string, err error) {
	if s.Content != nil {
		// Publishing is not cancelled part way through a package.
		rc, inf, err := s.Content.Open(context.Background(), r.Path, 0, -1)
		if err != nil {
			return nil, "cannot open", err
		}
		if inf.Size != r.Size {
			rc.Close()
			return nil, "changed since scanned", nil
		}
		return rc, "", nil
	}
	of, err := os.Open(filepath.Join(s.Dir, filepath.FromSlash(r.Path)))
	if err != nil {
		return nil, "cannot open", err
	}
	fi, err := of.Stat()
	if err != nil || fi.Size() != r.Size || !fi.Mode().IsRegular() {
		of.Close()
		return nil, "changed since scanned", err
	}
	return of, "", nil
}
