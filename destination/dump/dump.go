package dump

import (
	"archive/zip"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/resourcesync-go/resourcesync/rs"
)

// ManifestName is the name of the manifest member (RS-ZIP-1).
const ManifestName = "manifest.xml"

// Limits bound what a package may declare. A zero field takes the default.
type Limits struct {
	MaxMembers       int     // members in the archive, directories included; default 1,000,000
	MaxMemberBytes   int64   // declared uncompressed size of one member; default 64 GiB
	MaxTotalBytes    int64   // declared uncompressed size of all members; default 1 TiB
	MaxRatio         float64 // uncompressed/compressed of a member over 1 MiB; default 200
	MaxManifestBytes int64   // uncompressed size of manifest.xml; default 64 MiB
	// MaxPackageRatio bounds what the manifest's entries deliver in all
	// (the sum of their rs:md lengths, a member's size where an entry has
	// none; an entry naming a member another entry names counts again)
	// over the package's size, once that sum exceeds 1 MiB; default 200.
	// Members each under the per-member ratio floor, or one member named
	// by many entries, cannot inflate a small package to gigabytes.
	MaxPackageRatio float64
}

// DefaultLimits are the limits used where a field of Limits is zero.
var DefaultLimits = Limits{
	MaxMembers:       1_000_000,
	MaxMemberBytes:   64 << 30,
	MaxTotalBytes:    1 << 40,
	MaxRatio:         200,
	MaxManifestBytes: 64 << 20,
	MaxPackageRatio:  200,
}

// ratioFloor is the size up to which a member's ratio is not judged: small
// files of repetitive text legitimately compress far better than 200:1,
// and 1 MiB is harmless whatever its ratio.
const ratioFloor = 1 << 20

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxMembers <= 0 {
		l.MaxMembers = d.MaxMembers
	}
	l.MaxMembers = min(l.MaxMembers, math.MaxInt32) // members are indexed by int32
	if l.MaxMemberBytes <= 0 {
		l.MaxMemberBytes = d.MaxMemberBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = d.MaxTotalBytes
	}
	if l.MaxRatio <= 0 {
		l.MaxRatio = d.MaxRatio
	}
	if l.MaxManifestBytes <= 0 {
		l.MaxManifestBytes = d.MaxManifestBytes
	}
	if l.MaxPackageRatio <= 0 {
		l.MaxPackageRatio = d.MaxPackageRatio
	}
	return l
}

// Package is an opened, checked dump package. Each may be called more
// than once; Close releases the file.
type Package struct {
	name     string // for messages
	file     *os.File
	r        io.ReaderAt
	zr       *zip.Reader
	lim      Limits
	sorted   []int32 // indices into zr.File, by name
	offsets  []int64 // of each member's data, checked by checkOverlap; 0 when empty
	manifest int     // index of manifest.xml
	head     rs.Head
	legacy   string
	entries  int
	unlisted int
	size     int64  // of the archive
	declared uint64 // what the entries deliver, by the manifest's lengths
}

// slack is what the members may deliver beyond the manifest's declared
// total (members whose data are a little longer than the manifest says
// are refused by the length check of whoever installs them, after reading
// one byte more).
func (p *Package) slack() uint64 { return 64<<10 + p.declared/100 + uint64(p.entries) }

// Open opens the ZIP package at path and checks all of it (see the package
// documentation): any hostile or over-limit member refuses the whole
// package, as does a manifest entry whose member is absent or unsafe. On
// success, Each reads the members; only their bytes remain unverified.
func Open(path string, lim Limits) (*Package, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dump: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("dump: %w", err)
	}
	p, err := newPackage(newBlockReader(f, fi.Size()), fi.Size(), path, lim)
	if err != nil {
		f.Close()
		return nil, err
	}
	p.file = f
	return p, nil
}

// NewReader is Open for a package held by r, of size bytes. Close is then
// a no-op; r must stay readable while the Package is used.
func NewReader(r io.ReaderAt, size int64, lim Limits) (*Package, error) {
	return newPackage(r, size, "", lim)
}

func newPackage(r io.ReaderAt, size int64, name string, lim Limits) (*Package, error) {
	p := &Package{name: name, r: r, lim: lim.withDefaults(), size: size}
	if n, ok := declaredMembers(r, size); ok && n > uint64(p.lim.MaxMembers) {
		return nil, p.errorf("", ErrTooLarge, fmt.Sprintf("declares %d members, limit %d", n, p.lim.MaxMembers), nil)
	}
	zr, err := zip.NewReader(r, size)
	// With GODEBUG zipinsecurepath=0 archive/zip refuses non-local names
	// but still returns the reader; our own check below names the member.
	if err != nil && !(errors.Is(err, zip.ErrInsecurePath) && zr != nil) {
		return nil, p.errorf("", ErrFormat, "", err)
	}
	p.zr = zr
	if err := p.checkMembers(size); err != nil {
		return nil, err
	}
	if err := p.checkManifest(); err != nil {
		return nil, err
	}
	return p, nil
}

// Head returns the manifest's head.
func (p *Package) Head() rs.Head { return p.head }

// Legacy names the pre-1.0 draft the manifest was read as ("" for 1.x),
// as rs.Decoder.Legacy does.
func (p *Package) Legacy() string { return p.legacy }

// Entries returns the number of manifest entries Each will yield.
func (p *Package) Entries() int { return p.entries }

// Unlisted returns the number of regular members, other than the
// manifest, that no manifest entry names. Each ignores them.
func (p *Package) Unlisted() int { return p.unlisted }

// Close closes the package's file.
func (p *Package) Close() error {
	if p.file == nil {
		return nil
	}
	return p.file.Close()
}

func (p *Package) errorf(member string, sentinel error, detail string, cause error) error {
	return &Error{Package: p.name, Member: member, Err: sentinel, Detail: detail, Cause: cause}
}

// pathErr is an error about a manifest path.
func (p *Package) pathErr(path string, sentinel error, detail string) error {
	return &Error{Package: p.name, Path: path, Err: sentinel, Detail: detail}
}

// checkMembers refuses the package for any hostile member: an unsafe
// name, a link or special file, sizes over the limits, a bomb ratio,
// duplicates, or data ranges that overlap or leave the archive.
func (p *Package) checkMembers(size int64) error {
	files := p.zr.File
	if len(files) > p.lim.MaxMembers {
		return p.errorf("", ErrTooLarge, fmt.Sprintf("%d members, limit %d", len(files), p.lim.MaxMembers), nil)
	}
	var total uint64
	for _, f := range files {
		if why := unsafeName(f.Name); why != "" {
			return p.errorf(f.Name, ErrUnsafePath, why, nil)
		}
		mode := f.Mode()
		switch {
		case mode&fs.ModeSymlink != 0:
			return p.errorf(f.Name, ErrSymlink, "", nil)
		case mode&fs.ModeType&^fs.ModeDir != 0:
			return p.errorf(f.Name, ErrNotRegular, "mode "+mode.String(), nil)
		}
		u, c := f.UncompressedSize64, f.CompressedSize64
		if u > uint64(p.lim.MaxMemberBytes) {
			return p.errorf(f.Name, ErrTooLarge, fmt.Sprintf("declares %d bytes, limit %d", u, p.lim.MaxMemberBytes), nil)
		}
		total += u // cannot wrap: each term is below 2^63 and we stop past the limit
		if total > uint64(p.lim.MaxTotalBytes) {
			return p.errorf(f.Name, ErrTooLarge, fmt.Sprintf("members declare more than %d bytes in total", p.lim.MaxTotalBytes), nil)
		}
		if u > ratioFloor && (c == 0 || float64(u)/float64(c) > p.lim.MaxRatio) {
			return p.errorf(f.Name, ErrZipBomb, fmt.Sprintf("declares %d bytes from %d compressed, ratio limit %g", u, c, p.lim.MaxRatio), nil)
		}
	}
	p.sorted = make([]int32, len(files))
	for i := range p.sorted {
		p.sorted[i] = int32(i)
	}
	slices.SortFunc(p.sorted, func(a, b int32) int { return strings.Compare(files[a].Name, files[b].Name) })
	for i := 1; i < len(p.sorted); i++ {
		if n := files[p.sorted[i]].Name; n == files[p.sorted[i-1]].Name {
			return p.errorf(n, ErrDuplicate, "", nil)
		}
	}
	return p.checkOverlap(size)
}

// checkOverlap refuses members whose compressed data overlap: the
// "overlapping files" bomb points many entries at one kernel, each within
// the ratio limit, so that the total is not bounded by the archive's size.
// With disjoint data, what members over 1 MiB inflate to is at most
// MaxRatio times the archive.
func (p *Package) checkOverlap(size int64) error {
	files := p.zr.File
	p.offsets = make([]int64, len(files))
	order := make([]int32, 0, len(files))
	for i, f := range files {
		if f.CompressedSize64 == 0 {
			continue
		}
		off, err := f.DataOffset()
		if err != nil {
			return p.errorf(f.Name, ErrCorrupt, "", err)
		}
		if f.CompressedSize64 > uint64(size) || off < 0 || off > size-int64(f.CompressedSize64) {
			return p.errorf(f.Name, ErrCorrupt, "data extends past the end of the archive", nil)
		}
		p.offsets[i] = off
		order = append(order, int32(i))
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(p.offsets[a], p.offsets[b]) })
	for k := 1; k < len(order); k++ {
		prev, cur := order[k-1], order[k]
		if p.offsets[cur] < p.offsets[prev]+int64(files[prev].CompressedSize64) {
			return p.errorf(files[cur].Name, ErrZipBomb, "data overlaps member "+strconv.Quote(files[prev].Name), nil)
		}
	}
	return nil
}

// lookup returns the index of the member named name, or -1.
func (p *Package) lookup(name string) int {
	files := p.zr.File
	i, ok := slices.BinarySearchFunc(p.sorted, name, func(a int32, n string) int { return strings.Compare(files[a].Name, n) })
	if !ok {
		return -1
	}
	return int(p.sorted[i])
}

// resolve returns the regular member a manifest path names, refusing
// unsafe paths, directories, absent members and members we cannot read.
func (p *Package) resolve(path string) (int, error) {
	name := memberName(path)
	if why := unsafeName(name); why != "" {
		return -1, p.pathErr(path, ErrUnsafePath, why)
	}
	if strings.HasSuffix(name, "/") {
		return -1, p.pathErr(path, ErrNotRegular, "path names a directory")
	}
	i := p.lookup(name)
	if i < 0 {
		if p.lookup(name+"/") >= 0 {
			return -1, p.pathErr(path, ErrNotRegular, "member is a directory")
		}
		return -1, p.pathErr(path, ErrMissingMember, "")
	}
	if err := p.readable(p.zr.File[i]); err != nil {
		err.(*Error).Path = path
		return -1, err
	}
	return i, nil
}

// readable refuses a member that is a directory, encrypted, or
// compressed with a method other than store or deflate.
func (p *Package) readable(f *zip.File) error {
	switch {
	case f.Mode().IsDir():
		return p.errorf(f.Name, ErrNotRegular, "member is a directory", nil)
	case f.Flags&0x1 != 0:
		return p.errorf(f.Name, ErrUnsupported, "encrypted", nil)
	case f.Method != zip.Store && f.Method != zip.Deflate:
		return p.errorf(f.Name, ErrUnsupported, "method "+strconv.Itoa(int(f.Method)), nil)
	}
	return nil
}

// openManifest returns a decoder over manifest.xml, bounded by
// MaxManifestBytes.
func (p *Package) openManifest() (*rs.Decoder, error) {
	var fr io.ReadCloser
	m, err := p.openMember(p.manifest, &fr)
	if err != nil {
		return nil, err
	}
	d := rs.NewDecoder(m)
	d.Limits = rs.Limits{MaxDocumentBytes: p.lim.MaxManifestBytes}
	return d, nil
}

// manifestErr wraps a decoding error; the member reader's own errors
// (size, CRC) are returned as they are.
func (p *Package) manifestErr(err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return p.errorf(ManifestName, ErrManifest, "", err)
}

// checkManifest finds and decodes the manifest once, checking its head and
// every entry's path, and counts the members no entry names. Holding the
// entries would cost memory in proportion to the manifest; decoding again
// in Each costs only time.
func (p *Package) checkManifest() error {
	p.manifest = p.lookup(ManifestName)
	if p.manifest < 0 {
		return p.errorf("", ErrNoManifest, "", nil)
	}
	f := p.zr.File[p.manifest]
	if f.UncompressedSize64 > uint64(p.lim.MaxManifestBytes) {
		return p.errorf(ManifestName, ErrTooLarge, fmt.Sprintf("declares %d bytes, manifest limit %d", f.UncompressedSize64, p.lim.MaxManifestBytes), nil)
	}
	if err := p.readable(f); err != nil {
		return err
	}
	d, err := p.openManifest()
	if err != nil {
		return err
	}
	h, err := d.Head()
	if err != nil {
		return p.manifestErr(err)
	}
	// A root rs:md after the items (RS-GEN-10) is merged into the head
	// only once the decoder reaches it: an absent capability is judged at
	// the end.
	if h.Root != rs.URLSet || h.MD.Capability != "" && !h.MD.Capability.IsManifest() {
		return p.notManifest(h)
	}
	p.legacy = d.Legacy()
	listed := make([]bool, len(p.zr.File))
	var e rs.Entry
	for {
		err := d.NextInto(&e)
		if err == io.EOF {
			break
		}
		if err != nil {
			return p.manifestErr(err)
		}
		d.TakeDiagnostics() // not ours to report; dropped so they do not pile up
		p.entries++
		i, err := p.entryMember(&e)
		if err != nil {
			return err
		}
		if i >= 0 {
			listed[i] = true
			if err := p.addDeclared(&e, i); err != nil {
				return err
			}
		}
		// A link's path (a patch in a Change Dump) names a member too:
		// it must be safe, but Each does not deliver it, so it may be absent.
		for i := range e.Links {
			if e.Links[i].Path == "" {
				continue
			}
			if j, err := p.resolve(e.Links[i].Path); err == nil {
				listed[j] = true
			} else if errors.Is(err, ErrUnsafePath) {
				return err
			}
		}
	}
	if !h.MD.Capability.IsManifest() {
		return p.notManifest(h)
	}
	p.head = *h
	for i, f := range p.zr.File {
		if !listed[i] && i != p.manifest && !f.Mode().IsDir() {
			p.unlisted++
		}
	}
	return nil
}

// addDeclared adds what the entry delivers to the package's total and
// refuses the package when the total passes MaxTotalBytes or
// MaxPackageRatio times the package's size.
func (p *Package) addDeclared(e *rs.Entry, member int) error {
	n := p.zr.File[member].UncompressedSize64
	if e.MD.HasLength {
		n = uint64(max(e.MD.Length, 0))
	}
	p.declared += min(n, uint64(p.lim.MaxTotalBytes)+1) // cannot wrap: stops past the limit
	if p.declared > uint64(p.lim.MaxTotalBytes) {
		return p.errorf("", ErrTooLarge, fmt.Sprintf("manifest entries declare more than %d bytes in total", p.lim.MaxTotalBytes), nil)
	}
	if p.declared > ratioFloor && float64(p.declared) > p.lim.MaxPackageRatio*float64(p.size) {
		return p.errorf("", ErrZipBomb, fmt.Sprintf("manifest entries declare at least %d bytes from a package of %d bytes, ratio limit %g",
			p.declared, p.size, p.lim.MaxPackageRatio), nil)
	}
	return nil
}

// Declared returns the number of bytes the manifest's entries declare in
// all; Each delivers at most that and a small slack.
func (p *Package) Declared() int64 { return int64(p.declared) }

func (p *Package) notManifest(h *rs.Head) error {
	return p.errorf(ManifestName, ErrManifest, fmt.Sprintf("<%s> with capability %q, want a urlset of %s or %s",
		h.Root, h.MD.Capability, rs.CapResourceDumpManifest, rs.CapChangeDumpManifest), nil)
}

// entryMember returns the index of the member an entry names: -1 for a
// deletion.
func (p *Package) entryMember(e *rs.Entry) (int, error) {
	if e.MD.Change == rs.Deleted {
		// A deletion has no bitstream; a path it carries anyway must
		// still be safe, since a hostile manifest is not trusted.
		if e.MD.Path != "" {
			if why := unsafeName(memberName(e.MD.Path)); why != "" {
				return -1, p.pathErr(e.MD.Path, ErrUnsafePath, why)
			}
		}
		return -1, nil
	}
	if e.MD.Path == "" {
		return -1, p.errorf(ManifestName, ErrManifest, "entry "+strconv.Quote(e.Loc)+" has no path", nil)
	}
	return p.resolve(e.MD.Path)
}

// EachEntry calls fn for every manifest entry, in manifest order,
// without reading any member: what a package will deliver is known (and
// can be made durable elsewhere, as the Destination's intents are) before
// Each writes anything. It stops at the first error, fn's included, or
// when ctx is done.
func (p *Package) EachEntry(ctx context.Context, fn func(e *rs.Entry) error) error {
	d, err := p.openManifest()
	if err != nil {
		return err
	}
	if _, err := d.Head(); err != nil {
		return p.manifestErr(err)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		e, err := d.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return p.manifestErr(err)
		}
		d.TakeDiagnostics()
		if _, err := p.entryMember(e); err != nil {
			return err
		}
		if err := fn(e); err != nil {
			return err
		}
	}
}

// Each calls fn for every manifest entry, in manifest order, with a
// reader over the member the entry's path names (a nil reader for a
// deletion), valid until fn returns. The reader yields at most the
// member's declared size and fails with ErrSizeMismatch or ErrCorrupt when
// the data disagree with the header; if fn ignores such an error, Each
// returns it. Each stops at the first error, fn's included, which it
// returns as is, or when ctx is done.
func (p *Package) Each(ctx context.Context, fn func(e rs.Entry, r io.Reader) error) error {
	return p.each(ctx, p.r, p.budget(), nil, fn)
}

// budget is what the members of one pass over the package may deliver.
func (p *Package) budget() *atomic.Int64 {
	left := new(atomic.Int64)
	left.Store(int64(min(p.declared+p.slack(), math.MaxInt64)))
	return left
}

// EachParallel is Each on n goroutines at once, each reading and
// handing out its own share of the members: entry e goes to goroutine
// shard(e) (in [0, n); out of range: not delivered), and each goroutine
// calls fn(worker, e, r) for its entries in manifest order, so entries
// that shard puts together (say, by directory) are delivered by one
// goroutine, one after the other. No member's bytes pass from one
// goroutine to another: the calling goroutine decodes the manifest once
// and hands each its entries in batches (a hand-off per entry would cost
// about what a small member's install does), and each reads its members
// through its own buffer, so a consumer that installs what it is handed
// (decompression, CRC-32, its own hashing and writing) keeps n cores
// busy. Together the goroutines deliver at most what Each would. The
// first error (fn's, or the manifest's) stops them all and is returned.
func (p *Package) EachParallel(ctx context.Context, n int, shard func(e *rs.Entry) int, fn func(worker int, e rs.Entry, r io.Reader) error) error {
	if n <= 1 {
		return p.Each(ctx, func(e rs.Entry, r io.Reader) error {
			if shard(&e) != 0 {
				return nil
			}
			return fn(0, e, r)
		})
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	left := p.budget()
	errs := make([]error, n+1) // the workers', then the manifest reader's
	chs := make([]chan []shareItem, n)
	var wg sync.WaitGroup
	for w := range n {
		var r io.ReaderAt = p.r
		if p.file != nil {
			// Its own block buffer: two goroutines alternating in one
			// would each make the other read a block again.
			r = newBlockReader(p.file, p.size)
		}
		ch := make(chan []shareItem, 2)
		chs[w] = ch
		wg.Add(1)
		go func() {
			defer wg.Done()
			var fr io.ReadCloser // one decompressor for all its members
			for batch := range ch {
				if errs[w] == nil {
					errs[w] = p.deliver(ctx, r, &fr, left, batch, func(e rs.Entry, r io.Reader) error { return fn(w, e, r) })
					if errs[w] != nil {
						cancel()
					}
				}
			}
		}()
	}
	errs[n] = p.share(ctx, n, shard, chs)
	if errs[n] != nil {
		cancel()
	}
	for _, ch := range chs {
		close(ch)
	}
	wg.Wait()
	// The error that stopped the others, not the cancellation they saw.
	var first error
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// shareItem is an entry handed to an EachParallel goroutine, with the
// index of its member (-1: none, a deletion).
type shareItem struct {
	e rs.Entry
	i int
}

// shareBatch is the most entries handed over at once.
const shareBatch = 64

// share decodes the manifest once and hands each entry, with its member,
// to goroutine shard(e)'s channel, in batches.
func (p *Package) share(ctx context.Context, n int, shard func(e *rs.Entry) int, chs []chan []shareItem) error {
	fill := make([][]shareItem, n)
	send := func(w int) error {
		if len(fill[w]) == 0 {
			return nil
		}
		select {
		case chs[w] <- fill[w]:
			fill[w] = nil
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	d, err := p.openManifest()
	if err != nil {
		return err
	}
	if _, err := d.Head(); err != nil {
		return p.manifestErr(err)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		e, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return p.manifestErr(err)
		}
		d.TakeDiagnostics()
		i, err := p.entryMember(e)
		if err != nil {
			return err
		}
		w := shard(e)
		if w < 0 || w >= n {
			continue
		}
		if fill[w] == nil {
			fill[w] = make([]shareItem, 0, shareBatch)
		}
		fill[w] = append(fill[w], shareItem{e: *e, i: i})
		if len(fill[w]) >= shareBatch {
			if err := send(w); err != nil {
				return err
			}
		}
	}
	for w := range fill {
		if err := send(w); err != nil {
			return err
		}
	}
	return nil
}

// deliver calls fn for each entry of batch with its member's reader,
// read through r.
func (p *Package) deliver(ctx context.Context, r io.ReaderAt, fr *io.ReadCloser, left *atomic.Int64, batch []shareItem, fn func(e rs.Entry, r io.Reader) error) error {
	for k := range batch {
		it := &batch[k]
		if err := ctx.Err(); err != nil {
			return err
		}
		if it.i < 0 {
			if err := fn(it.e, nil); err != nil {
				return err
			}
			continue
		}
		m, err := p.openMemberAt(r, it.i, fr)
		if err != nil {
			return err
		}
		m.left = left
		if err := fn(it.e, m); err != nil {
			return err
		}
		if m.err != nil {
			return m.err
		}
	}
	return nil
}

// each is Each over the entries take accepts (nil: all), reading through
// r with the shared budget left.
func (p *Package) each(ctx context.Context, r io.ReaderAt, left *atomic.Int64, take func(*rs.Entry) bool, fn func(e rs.Entry, r io.Reader) error) error {
	d, err := p.openManifest()
	if err != nil {
		return err
	}
	var fr io.ReadCloser // one decompressor for all members
	if _, err := d.Head(); err != nil {
		return p.manifestErr(err)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		e, err := d.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return p.manifestErr(err)
		}
		d.TakeDiagnostics()
		i, err := p.entryMember(e)
		if err != nil {
			return err
		}
		if take != nil && !take(e) {
			continue
		}
		if i < 0 {
			if err := fn(*e, nil); err != nil {
				return err
			}
			continue
		}
		m, err := p.openMemberAt(r, i, &fr)
		if err != nil {
			return err
		}
		m.left = left
		if err := fn(*e, m); err != nil {
			return err
		}
		if m.err != nil {
			return m.err
		}
	}
}
