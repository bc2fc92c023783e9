package publish

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/nofollow"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// Dumps on demand (Config.DumpsOnDemand): Publish plans the packages
// without writing them (dumpplan below) and Dumps.Serve produces each one
// when it is requested, streamed from the files (see the package
// documentation, "Dumps on demand").

const metaChangeDumpsOnDemand = "publish.changedumps.ondemand"

// replanAfter is the most an on-demand Resource Dump plan waits before a
// changed collection gets a new one. A plan costs a pass over the
// inventory (no file is read), so a changed collection is replanned at
// the next publish once the plan is 20 times as old as it took to make
// (a small collection at once, a million files about once a minute), but
// never waits longer than this. A package whose range changed in between
// answers 404 and the Destination fetches its resources from the
// Resource List.
const replanAfter = time.Minute

// replanAge is how old a plan that took took to make must be before a
// changed collection is planned again.
func replanAge(took time.Duration) time.Duration {
	return min(20*took, replanAfter)
}

// lazyPkg is the content of a package produced on demand: its manifest,
// its layout, and the inventory records of its bitstreams, which the
// bytes read from Set.Dir must match.
type lazyPkg struct {
	s        *Set
	layout   *zipLayout
	manifest []byte
	mcrc     uint32
	files    []store.Resource // members 1..
	sha      string           // hex sha-256 of the manifest
}

// newLazyPkg lays out the package of items (manifest.xml first, then a
// member per item with a bitstream, as writePackage orders them).
func (p *publisher) newLazyPkg(k pkgKind, h *rs.Head, items []dumpItem) (*lazyPkg, error) {
	var buf bytes.Buffer
	err := encodeDoc(&buf, "manifest.xml", h, func(emit func(*rs.Entry) error) error {
		for i := range items {
			e := k.entry(&items[i])
			if err := emit(&e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	mod := h.MD.At.Time()
	if mod.IsZero() {
		mod = h.MD.Until.Time()
	}
	pk := &lazyPkg{s: k.s, manifest: buf.Bytes(), mcrc: crc32.ChecksumIEEE(buf.Bytes())}
	members := make([]zipMember, 1, len(items)+1)
	members[0] = zipMember{name: "manifest.xml", size: int64(buf.Len()), mod: mod.UTC()}
	for i := range items {
		if !items[i].file {
			continue
		}
		r := &items[i].c.Resource
		members = append(members, zipMember{name: k.zipName(&items[i]), size: r.Size, mod: r.LastMod.UTC()})
		pk.files = append(pk.files, *r)
	}
	l, ok := newZipLayout(members)
	if !ok {
		return nil, errors.New("publish: dump: a member name is too long for ZIP")
	}
	pk.layout = l
	sum := sha256.Sum256(pk.manifest)
	pk.sha = hex.EncodeToString(sum[:])
	return pk, nil
}

// info returns the pkgInfo recording a planned package.
func (pk *lazyPkg) info(name string) pkgInfo {
	return pkgInfo{Name: name, Length: pk.layout.size, Bitstreams: len(pk.files), Manifest: pk.sha}
}

// resourceDumpPlan plans a Resource Dump whose packages are produced on
// demand: the same packages resourceDump writes, recorded in the meta by
// their first path, entry count, length and manifest digest.
func (p *publisher) resourceDumpPlan(ctx context.Context, s *Set, sr *SetReport, old *rdState, had bool, ver dumpVersion, locs string) error {
	gensRel := setDoc(s.Name, "resourcedumps")
	if had && old.OnDemand && old.Locs == locs && (old.Version == ver || p.now.Sub(old.At) < replanAge(old.PlanTook)) {
		if err := p.writeResourceDumpDoc(s, old); err != nil {
			return err
		}
		return removeExcept(p.file(gensRel), nil) // packages a materialised dump left
	}
	start := time.Now()
	at := p.now
	gen := compact(at)
	if gen == old.Gen {
		gen += "-1"
	}
	st := rdState{Version: ver, At: at, Gen: gen, Locs: locs, OnDemand: true}
	mhead := p.rdManifestHead(s, at)
	var (
		batch  []dumpItem
		nbytes int64
	)
	flush := func() error {
		pk, err := p.newLazyPkg(pkgKind{s: s}, &mhead, batch)
		if err != nil {
			return err
		}
		info := pk.info(fmt.Sprintf("part-%05d", len(st.Parts)+1))
		info.First, info.Count = batch[0].c.Path(), len(batch)
		st.Parts = append(st.Parts, info)
		sr.DumpBytes += info.Length
		batch, nbytes = batch[:0], 0
		return nil
	}
	for r, err := range s.Store.ResourcesIn(ctx, "", "") {
		if err != nil {
			return fmt.Errorf("resource dump: %w", err)
		}
		if !safePath(r.Path) {
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
	st.PlanTook = time.Since(start)
	if err := putMeta(ctx, s.Store, metaResourceDump, st); err != nil {
		return err
	}
	if err := p.writeResourceDumpDoc(s, &st); err != nil {
		return err
	}
	sr.ResourceDump, sr.DumpParts = true, len(st.Parts)
	p.log.Info("publish: resource dump planned (produced on demand)", "set", s.Name, "packages", len(st.Parts), "bytes", sr.DumpBytes)
	return removeExcept(p.file(gensRel), nil)
}

func (p *publisher) rdManifestHead(s *Set, at time.Time) rs.Head {
	return rs.Head{MD: rs.Metadata{Capability: rs.CapResourceDumpManifest, At: rs.NewTime(at)},
		Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)}}}
}

func (p *publisher) cdManifestHead(s *Set, from, until time.Time) rs.Head {
	return rs.Head{MD: rs.Metadata{Capability: rs.CapChangeDumpManifest, From: rs.NewTime(from), Until: rs.NewTime(until)},
		Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)}}}
}

// rdPackage rebuilds planned Resource Dump package pk from the inventory.
func (p *publisher) rdPackage(ctx context.Context, s *Set, st *rdState, pk *pkgInfo) (*lazyPkg, error) {
	items := make([]dumpItem, 0, pk.Count)
	for r, err := range s.Store.ResourcesIn(ctx, pk.First, "") {
		if err != nil {
			return nil, err
		}
		if !safePath(r.Path) {
			continue
		}
		items = append(items, dumpItem{c: store.Change{Resource: r}, file: true})
		if len(items) == pk.Count {
			break
		}
	}
	h := p.rdManifestHead(s, st.At)
	return p.newLazyPkg(pkgKind{s: s}, &h, items)
}

// cdItems returns the items of the Change Dump package of the records
// first..last: a bitstream for a created or updated record whose resource
// the inventory still holds with the record's bytes (the Source keeps no
// old versions); other records are left out, as writePackage leaves out a
// bitstream that no longer matches.
func cdItems(ctx context.Context, s *Set, first, last uint64) ([]dumpItem, error) {
	var items []dumpItem
	err := journalRange(ctx, s.Store, first, last, func(c *store.Change) error {
		if c.Kind == rs.Deleted {
			items = append(items, dumpItem{c: *c})
			return nil
		}
		if !safePath(c.Path()) {
			return nil
		}
		cur, err := s.Store.Get(ctx, c.Path())
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if cur.SHA256 != c.Resource.SHA256 || cur.Size != c.Resource.Size {
			return nil
		}
		items = append(items, dumpItem{c: *c, file: true})
		return nil
	})
	return items, err
}

// changeDumpsPlan is changeDumps for packages produced on demand: each
// closed Change List's package is planned once (its length and manifest
// digest recorded); the materialised packages are removed.
func (p *publisher) changeDumpsPlan(ctx context.Context, s *Set, closed []clList, sr *SetReport) error {
	var st cdState
	if _, err := getMeta(ctx, s.Store, metaChangeDumpsOnDemand, &st); err != nil {
		return err
	}
	ss, err := s.Store.Stats(ctx)
	if err != nil {
		return fmt.Errorf("change dump: %w", err)
	}
	planned := map[string]pkgInfo{}
	for _, pk := range st.Packages {
		planned[pk.Name] = pk
	}
	var pkgs []pkgInfo
	changed := false
	for i := range closed {
		l := &closed[i]
		if pk, ok := planned[l.name()]; ok {
			pkgs = append(pkgs, pk)
			continue
		}
		items, err := cdItems(ctx, s, l.First, l.Next-1)
		if err != nil {
			return fmt.Errorf("change dump %s: %w", l.name(), err)
		}
		h := p.cdManifestHead(s, l.From, l.Until)
		lp, err := p.newLazyPkg(pkgKind{s: s, change: true}, &h, items)
		if err != nil {
			return err
		}
		info := lp.info(l.name())
		info.From, info.Until, info.FirstSeq, info.LastSeq = l.From, l.Until, l.First, l.Next-1
		pkgs = append(pkgs, info)
		changed = true
		sr.ChangeDumps++
	}
	checked, dropped, err := p.dropStale(ctx, s, pkgs, planned, st.Checked, ss.LastSeq)
	if err != nil {
		return fmt.Errorf("change dump: %w", err)
	}
	if changed || dropped || checked != st.Checked {
		if err := putMeta(ctx, s.Store, metaChangeDumpsOnDemand, cdState{Packages: pkgs, Checked: checked}); err != nil {
			return err
		}
	}
	listed := make([]pkgInfo, 0, len(pkgs))
	for _, pk := range pkgs {
		if !pk.Dropped {
			listed = append(listed, pk)
		}
	}
	if err := p.writeChangeDumpDoc(ctx, s, closed, listed); err != nil {
		return err
	}
	return removeExcept(p.file(setDoc(s.Name, "changedumps")), nil)
}

// dropStale marks Dropped the packages planned by an earlier run (in
// planned) that the journal and inventory no longer produce as planned: a
// package holds the bytes of its list's records, and the Source keeps no
// old versions, so once a resource of the list changes again the package
// would answer 404 for ever. Only the packages holding a path of a record
// after seq checked are rebuilt (no file is read); last is the journal's
// last seq before the packages were planned. It returns the journal
// seq checked up to and whether any package was dropped.
func (p *publisher) dropStale(ctx context.Context, s *Set, pkgs []pkgInfo, planned map[string]pkgInfo, checked, last uint64) (uint64, bool, error) {
	old := false
	for i := range pkgs {
		_, ok := planned[pkgs[i].Name]
		old = old || (ok && !pkgs[i].Dropped)
	}
	if !old {
		// Nothing planned earlier: the journal is not read (the packages
		// just planned are current), only its end is noted. It was read
		// before the planning, so no later record goes unchecked.
		return max(checked, last), false, nil
	}
	paths := map[string]bool{}
	for c, err := range s.Store.Journal(ctx, checked+1) {
		if err != nil {
			return checked, false, err
		}
		paths[c.Path()] = true
		checked = c.Seq
	}
	dropped := false
	if len(paths) == 0 {
		return checked, false, nil
	}
	for i := range pkgs {
		pk := &pkgs[i]
		if _, old := planned[pk.Name]; !old || pk.Dropped {
			continue
		}
		touched := false
		err := journalRange(ctx, s.Store, pk.FirstSeq, pk.LastSeq, func(c *store.Change) error {
			touched = touched || paths[c.Path()]
			return nil
		})
		if err != nil {
			return checked, dropped, err
		}
		if !touched {
			continue
		}
		lp, err := p.cdPackage(ctx, s, pk)
		if err != nil {
			return checked, dropped, err
		}
		if lp.sha != pk.Manifest {
			pk.Dropped, dropped = true, true
			p.log.Info("publish: change dump package dropped: a resource of its list changed since", "set", s.Name, "package", pk.Name)
		}
	}
	return checked, dropped, nil
}

// cdPackage rebuilds planned Change Dump package pk from the journal.
func (p *publisher) cdPackage(ctx context.Context, s *Set, pk *pkgInfo) (*lazyPkg, error) {
	items, err := cdItems(ctx, s, pk.FirstSeq, pk.LastSeq)
	if err != nil {
		return nil, err
	}
	h := p.cdManifestHead(s, pk.From, pk.Until)
	return p.newLazyPkg(pkgKind{s: s, change: true}, &h, items)
}

// Dumps serves the packages of the dumps Publish plans with
// Config.DumpsOnDemand, producing each when it is requested: a ZIP streamed
// from the files of Set.Dir, byte for byte the same for the same
// inventory (so its length in the dump document is exact, and Range
// requests resume a download). It may serve concurrently with Publish.
type Dumps struct {
	p    *publisher
	mu   sync.Mutex
	crcs map[string]*crcSet // by package URL path and manifest digest
}

// crcSet caches the CRC-32s of a package's members, learnt while they are
// streamed: the data descriptors and the central directory need them, and
// a Range request that starts late would otherwise read every file before
// it.
type crcSet struct {
	mu  sync.Mutex
	crc []uint32
	ok  []bool
}

// maxCachedPackages bounds the CRC cache (4 bytes a member: 40 KB for a
// package of 10,000).
const maxCachedPackages = 256

// NewDumps returns the server of cfg's on-demand dumps (cfg as given to
// Publish).
func NewDumps(cfg Config) (*Dumps, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	return &Dumps{p: &publisher{cfg: cfg, log: cfg.Logger}, crcs: map[string]*crcSet{}}, nil
}

func (d *Dumps) crcSet(key string, n int) *crcSet {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.crcs[key]; c != nil {
		return c
	}
	if len(d.crcs) >= maxCachedPackages {
		for k := range d.crcs {
			delete(d.crcs, k)
			break
		}
	}
	c := &crcSet{crc: make([]uint32, n), ok: make([]bool, n)}
	d.crcs[key] = c
	return c
}

// Serve answers a GET or HEAD of rel (a path relative to the base URL)
// when it names an on-demand dump package (.zip) or its manifest copy
// (.manifest.xml), and reports whether it did. A package the current
// inventory or journal no longer produces (the collection changed since
// it was planned) is 404: the Destination then fetches its resources from
// the Resource List. If a file no longer has the inventory's bytes while
// the package streams, the response is aborted (the client sees a broken
// download, never wrong content).
func (d *Dumps) Serve(w http.ResponseWriter, r *http.Request, rel string) bool {
	set, kind, dir, name, ok := splitDumpPath(rel)
	if !ok {
		return false
	}
	var s *Set
	for i := range d.p.cfg.Sets {
		if d.p.cfg.Sets[i].Name == set {
			s = &d.p.cfg.Sets[i]
		}
	}
	if s == nil || s.Follow {
		return false
	}
	zip := strings.HasSuffix(name, ".zip")
	base := strings.TrimSuffix(strings.TrimSuffix(name, ".zip"), ".manifest.xml")
	ctx := r.Context()
	var (
		pk  *lazyPkg
		at  time.Time
		exp string // the planned manifest digest
		err error
	)
	switch kind {
	case "resourcedumps":
		var st rdState
		had, gerr := getMeta(ctx, s.Store, metaResourceDump, &st)
		if gerr != nil || !had || !st.OnDemand || st.Gen != dir {
			return false
		}
		for i := range st.Parts {
			if st.Parts[i].Name == base {
				pk, err = d.p.rdPackage(ctx, s, &st, &st.Parts[i])
				at, exp = st.At, st.Parts[i].Manifest
				break
			}
		}
	case "changedumps":
		var st cdState
		had, gerr := getMeta(ctx, s.Store, metaChangeDumpsOnDemand, &st)
		if gerr != nil || !had {
			return false
		}
		for i := range st.Packages {
			if st.Packages[i].Name == base && !st.Packages[i].Dropped {
				pk, err = d.p.cdPackage(ctx, s, &st.Packages[i])
				at, exp = st.Packages[i].Until, st.Packages[i].Manifest
				break
			}
		}
	}
	if err != nil {
		if ctx.Err() == nil {
			d.p.log.Error("dump package", "path", rel, "err", err)
			http.Error(w, "state unavailable", http.StatusServiceUnavailable)
		}
		return true
	}
	if pk == nil {
		return false
	}
	if pk.sha != exp {
		http.Error(w, "dump package no longer current: the collection changed since it was listed; fetch its resources from the Resource List", http.StatusNotFound)
		return true
	}
	w.Header().Set("ETag", `"`+pk.sha+`"`)
	if !zip {
		w.Header().Set("Content-Type", "application/xml")
		http.ServeContent(w, r, "", at, bytes.NewReader(pk.manifest))
		return true
	}
	w.Header().Set("Content-Type", zipType)
	if strings.Contains(r.Header.Get("Range"), ",") {
		// Several ranges get the whole package (RFC 9110 lets a server
		// ignore Range): net/http serves them from a goroutine that may
		// still read ps after this handler ended it, and each range
		// inside a large file would re-read and re-hash it from its start.
		r.Header.Del("Range")
	}
	ps := &pkgStream{pk: pk, crcs: d.crcSet(rel+"@"+pk.sha, len(pk.layout.members)), fi: -1, bi: -1}
	defer ps.end()
	http.ServeContent(w, r, "", at, ps)
	if ps.err != nil && !errors.Is(ps.err, context.Canceled) {
		d.p.log.Warn("dump package: download aborted", "path", rel, "err", ps.err)
		panic(http.ErrAbortHandler) // the client must not take a short body for a whole one
	}
	return true
}

// splitDumpPath splits .resourcesync/SET/resourcedumps/GEN/NAME and
// .resourcesync/SET/changedumps/NAME.
func splitDumpPath(rel string) (set, kind, dir, name string, ok bool) {
	parts := strings.Split(rel, "/")
	if len(parts) < 4 || parts[0] != docRoot {
		return
	}
	name = parts[len(parts)-1]
	if !strings.HasSuffix(name, ".zip") && !strings.HasSuffix(name, ".manifest.xml") {
		return
	}
	switch {
	case len(parts) == 5 && parts[2] == "resourcedumps":
		return parts[1], parts[2], parts[3], name, true
	case len(parts) == 4 && parts[2] == "changedumps":
		return parts[1], parts[2], "", name, true
	}
	return
}

// errChanged is the error of a stream whose file no longer has the bytes
// of the inventory.
var errChanged = errors.New("file changed since it was scanned")

// pkgStream reads a package produced on demand: an io.ReadSeeker for
// http.ServeContent (which serves ranges by seeking).
type pkgStream struct {
	pk   *lazyPkg
	crcs *crcSet
	pos  int64
	tail []byte
	err  error // sticky

	// the large file being read: member fi, fpos bytes of it read and
	// hashed
	fi   int
	f    io.ReadCloser
	fpos int64
	sha  hash.Hash
	crc  hash.Hash32

	// a small file read whole and verified: member bi's bytes
	bi    int
	buf   []byte
	bp    *[]byte
	ahead *lazyAhead // the small files after it, read ahead
}

func (ps *pkgStream) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += ps.pos
	case io.SeekEnd:
		off += ps.pk.layout.size
	}
	if off < 0 {
		return 0, errors.New("publish: seek before start")
	}
	ps.pos = off
	return off, nil
}

func (ps *pkgStream) Read(b []byte) (int, error) {
	if ps.err != nil {
		return 0, ps.err
	}
	l := ps.pk.layout
	if ps.pos >= l.size {
		return 0, io.EOF
	}
	// Fill b across members: fewer, larger writes to the connection.
	total := 0
	for total < len(b) && ps.pos < l.size {
		n, err := ps.read(b[total:])
		ps.pos += int64(n)
		total += n
		if err != nil {
			ps.err = err
			return total, err
		}
	}
	return total, nil
}

func (ps *pkgStream) read(b []byte) (int, error) {
	l := ps.pk.layout
	if ps.pos >= l.cdStart {
		if ps.tail == nil {
			crcs := make([]uint32, len(l.members))
			for i := range l.members {
				c, err := ps.memberCRC(i)
				if err != nil {
					return 0, err
				}
				crcs[i] = c
			}
			ps.tail = l.tail(crcs)
		}
		return copy(b, ps.tail[ps.pos-l.cdStart:]), nil
	}
	i := l.member(ps.pos)
	m := &l.members[i]
	rel := ps.pos - m.off
	if hl := m.headerLen(); rel < hl {
		return copy(b, m.appendHeader(make([]byte, 0, hl))[rel:]), nil
	} else {
		rel -= hl
	}
	if rel < m.size {
		b = b[:min(int64(len(b)), m.size-rel)]
		if i == 0 {
			return copy(b, ps.pk.manifest[rel:]), nil
		}
		return ps.data(i, rel, b)
	}
	rel -= m.size
	c, err := ps.memberCRC(i)
	if err != nil {
		return 0, err
	}
	return copy(b, m.appendDesc(make([]byte, 0, 24), c)[rel:]), nil
}

// data reads bytes of member i's file from offset off. The file is hashed
// from its start whatever the offset (a Range request reads its head
// too), so that once its end is read its bytes are known to be the
// inventory's.
func (ps *pkgStream) data(i int, off int64, b []byte) (int, error) {
	r := &ps.pk.files[i-1]
	if ps.bi == i {
		return copy(b, ps.buf[off:]), nil
	}
	if off == 0 && r.Size <= smallFile {
		// A small file is read and verified whole before any of its bytes
		// is sent: a file changed since the scan aborts the download
		// before its bytes go out.
		if err := ps.readSmall(i, r); err != nil {
			return 0, err
		}
		return copy(b, ps.buf), nil
	}
	if ps.fi != i || ps.fpos != off {
		ps.close()
		f, err := ps.open(r)
		if err != nil {
			return 0, err
		}
		ps.f, ps.fi, ps.fpos = f, i, 0
		if ps.sha == nil {
			ps.sha, ps.crc = sha256.New(), crc32.NewIEEE()
		}
		ps.sha.Reset()
		ps.crc.Reset()
		if off > 0 {
			if n, err := io.CopyN(io.MultiWriter(ps.sha, ps.crc), f, off); err != nil || n != off {
				return 0, fmt.Errorf("%s: %w", r.Path, errChanged)
			}
			ps.fpos = off
		}
	}
	n, err := io.ReadFull(ps.f, b)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", r.Path, errChanged)
	}
	ps.sha.Write(b[:n])
	ps.crc.Write(b[:n])
	ps.fpos += int64(n)
	if ps.fpos == r.Size {
		var sum [32]byte
		ps.sha.Sum(sum[:0])
		ps.close()
		if sum != r.SHA256 {
			return 0, fmt.Errorf("%s: %w", r.Path, errChanged)
		}
		ps.setCRC(i, ps.crc.Sum32())
	}
	return n, nil
}

// readSmall makes member i's file, read whole and verified, ps.buf:
// from the read-ahead when it has it, else read here (and the read-ahead
// started from the next member, a download going on sequentially).
func (ps *pkgStream) readSmall(i int, r *store.Resource) error {
	ps.close()
	ps.putBuf()
	var sm smallRead
	if ps.ahead != nil {
		sm = ps.ahead.take(i)
	}
	if sm.b == nil && sm.err == nil {
		ps.ahead.stop()
		sm = readWhole(ps.pk.s, r)
		ps.ahead = ps.startAhead(i + 1)
	}
	if sm.err != nil {
		return sm.err
	}
	ps.buf, ps.bp, ps.bi = sm.b, sm.bp, i
	ps.setCRC(i, sm.crc)
	return nil
}

func (ps *pkgStream) putBuf() {
	if ps.bp != nil {
		putSmallBuf(ps.bp)
	}
	ps.buf, ps.bp, ps.bi = nil, nil, -1
}

// smallRead is a small file read whole and verified against the inventory.
type smallRead struct {
	b   []byte
	bp  *[]byte // b's buffer, back to smallBufs once sent
	crc uint32
	err error
}

func readWhole(s *Set, r *store.Resource) smallRead {
	pool := &smallBufs
	if r.Size <= tinyFile {
		pool = &tinyBufs
	}
	bp := pool.Get().(*[]byte)
	b := (*bp)[:r.Size+1] // one more byte: a file that grew is seen
	var n int
	var ok bool
	if s.Content != nil {
		// A download's context is not at hand here (the read-ahead
		// outlives no download: end stops it).
		n, ok = readContentInto(context.Background(), s, r, b)
	} else {
		n, ok = readFileInto(filepath.Join(s.Dir, filepath.FromSlash(r.Path)), b)
	}
	if !ok || int64(n) != r.Size || sha256.Sum256(b[:n]) != r.SHA256 {
		pool.Put(bp)
		return smallRead{err: fmt.Errorf("%s: %w", r.Path, errChanged)}
	}
	return smallRead{b: b[:n], bp: bp, crc: crc32.ChecksumIEEE(b[:n])}
}

// smallBufs and tinyBufs hold the buffers of small files read whole: a
// download holds up to lazyReadAhead of them, so a tiny file must not pin
// smallFile bytes.
var (
	smallBufs = sync.Pool{New: func() any { b := make([]byte, smallFile+1); return &b }}
	tinyBufs  = sync.Pool{New: func() any { b := make([]byte, tinyFile+1); return &b }}
)

const tinyFile = 16 << 10

func putSmallBuf(bp *[]byte) {
	if cap(*bp) > tinyFile+1 {
		smallBufs.Put(bp)
	} else {
		tinyBufs.Put(bp)
	}
}

// lazyAhead reads the small files of the members after the one being sent,
// on other goroutines, in order (opening, reading and hashing many small
// files is most of a package's cost; sending goes on meanwhile).
type lazyAhead struct {
	slots chan aheadSlot
	quit  chan struct{}
	wg    sync.WaitGroup
}

type aheadSlot struct {
	i   int
	res chan smallRead
}

// lazyReadAhead is how many files may be read ahead of the sender.
const lazyReadAhead = 32

func (ps *pkgStream) startAhead(from int) *lazyAhead {
	ms := ps.pk.layout.members
	if from >= len(ms) {
		return nil
	}
	ra := &lazyAhead{slots: make(chan aheadSlot, lazyReadAhead), quit: make(chan struct{})}
	jobs := make(chan aheadSlot)
	workers := min(max(runtime.GOMAXPROCS(0), 2), 4)
	ra.wg.Add(1 + workers)
	go func() {
		defer ra.wg.Done()
		defer close(ra.slots)
		defer close(jobs)
		for i := from; i < len(ms); i++ {
			if ms[i].size > smallFile {
				return // the sender streams it; a new read-ahead starts after it
			}
			sl := aheadSlot{i: i, res: make(chan smallRead, 1)}
			select {
			case ra.slots <- sl:
			case <-ra.quit:
				return
			}
			select {
			case jobs <- sl:
			case <-ra.quit:
				return
			}
		}
	}()
	for range workers {
		go func() {
			defer ra.wg.Done()
			for sl := range jobs {
				sl.res <- readWhole(ps.pk.s, &ps.pk.files[sl.i-1])
			}
		}()
	}
	return ra
}

// take returns member i's read, or a zero smallRead when the read-ahead
// does not hold it (a seek elsewhere).
func (ra *lazyAhead) take(i int) smallRead {
	for sl := range ra.slots {
		if sl.i == i {
			return <-sl.res
		}
		if sl.i > i {
			break
		}
	}
	return smallRead{}
}

// stop ends the read-ahead and waits for its goroutines.
func (ra *lazyAhead) stop() {
	if ra == nil {
		return
	}
	close(ra.quit)
	for range ra.slots {
	}
	ra.wg.Wait()
}

func (ps *pkgStream) open(r *store.Resource) (io.ReadCloser, error) {
	if ps.pk.s.Content != nil {
		return openContent(context.Background(), ps.pk.s, r)
	}
	return openResource(ps.pk.s.Dir, r)
}

func openResource(dir string, r *store.Resource) (*os.File, error) {
	// No link below dir is followed: a large file's bytes go out before
	// its sha-256 is checked at the member's end, so a link swapped in
	// would leak what it points at; a FIFO must not block the open.
	f, err := nofollow.Open(dir, r.Path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.Path, errChanged)
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != r.Size {
		f.Close()
		return nil, fmt.Errorf("%s: %w", r.Path, errChanged)
	}
	return f, nil
}

// end releases what the stream holds once the response is done.
func (ps *pkgStream) end() {
	ps.close()
	ps.putBuf()
	ps.ahead.stop()
	ps.ahead = nil
}

func (ps *pkgStream) close() {
	if ps.f != nil {
		ps.f.Close()
		ps.f, ps.fi = nil, -1
	}
}

func (ps *pkgStream) setCRC(i int, c uint32) {
	ps.crcs.mu.Lock()
	ps.crcs.crc[i], ps.crcs.ok[i] = c, true
	ps.crcs.mu.Unlock()
}

// memberCRC returns member i's CRC-32: from the cache, else by reading
// (and verifying) its file.
func (ps *pkgStream) memberCRC(i int) (uint32, error) {
	if i == 0 {
		return ps.pk.mcrc, nil
	}
	ps.crcs.mu.Lock()
	c, ok := ps.crcs.crc[i], ps.crcs.ok[i]
	ps.crcs.mu.Unlock()
	if ok {
		return c, nil
	}
	r := &ps.pk.files[i-1]
	f, err := ps.open(r)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sh, cr := sha256.New(), crc32.NewIEEE()
	n, err := io.Copy(io.MultiWriter(sh, cr), f)
	var sum [32]byte
	if err != nil || n != r.Size || [32]byte(sh.Sum(sum[:0])) != r.SHA256 {
		return 0, fmt.Errorf("%s: %w", r.Path, errChanged)
	}
	ps.setCRC(i, cr.Sum32())
	return cr.Sum32(), nil
}
