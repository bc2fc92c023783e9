package publish

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/store"
	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/scan"
)

const (
	metaResourceDump = "publish.resourcedump"
	metaChangeDumps  = "publish.changedumps"
	zipType          = "application/zip"
)

// pkgInfo describes one written package.
type pkgInfo struct {
	Name       string    // file name without extension, in its directory
	From       time.Time `json:",omitzero"` // change dump packages
	Until      time.Time `json:",omitzero"`
	Length     int64
	SHA256     string
	Bitstreams int
}

type rdState struct {
	Fingerprint string
	At          time.Time
	Gen         string
	Parts       []pkgInfo
}

type cdState struct {
	Packages []pkgInfo // chronological
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

// pkgBuilder writes one ZIP package. Bitstreams go to a temporary ZIP
// first, each verified against the inventory's sha-256 while it is copied;
// finish then writes the manifest and the package proper: manifest.xml
// first, then the verified bitstreams copied raw from the temporary ZIP.
type pkgBuilder struct {
	p     *publisher
	dir   string // absolute directory of the package
	name  string
	tmp   *os.File
	zw    *zip.Writer
	skip  map[string]bool
	count int   // bitstreams added (verified or not)
	bytes int64 // their sizes
	buf   []byte
}

func (p *publisher) newPkg(dir, name string) (*pkgBuilder, error) {
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	tmp, err := os.CreateTemp(dir, tmpPrefix+name+"-bits-*")
	if err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	return &pkgBuilder{p: p, dir: dir, name: name, tmp: tmp, zw: zip.NewWriter(tmp),
		skip: map[string]bool{}, buf: make([]byte, 256<<10)}, nil
}

// add copies the file at file into the package as zipName. It returns
// false (and logs why) when the file cannot be read or its bytes are no
// longer those of r; an error only for a failure to write the package.
func (b *pkgBuilder) add(file, zipName string, r *store.Resource) (bool, error) {
	f, err := os.Open(file)
	if err != nil {
		b.p.log.Warn("publish: dump: resource left out: cannot open", "path", r.Path, "err", err)
		return false, nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() != r.Size || !fi.Mode().IsRegular() {
		b.p.log.Warn("publish: dump: resource left out: changed since scanned", "path", r.Path)
		return false, nil
	}
	w, err := b.zw.CreateHeader(&zip.FileHeader{Name: zipName, Method: zip.Store, Modified: r.LastMod})
	if err != nil {
		return false, fmt.Errorf("publish: package %s: %w", b.name, err)
	}
	b.count++
	b.bytes += r.Size
	h := sha256.New()
	n, err := io.CopyBuffer(io.MultiWriter(errWriter{w}, h), struct{ io.Reader }{io.LimitReader(f, r.Size+1)}, b.buf)
	var werr *writeErr
	switch {
	case errors.As(err, &werr):
		return false, werr.err
	case err != nil:
		b.p.log.Warn("publish: dump: resource left out: read error", "path", r.Path, "err", err)
	case n != r.Size || !bytes.Equal(h.Sum(nil), r.SHA256[:]):
		b.p.log.Warn("publish: dump: resource left out: bytes changed since scanned", "path", r.Path)
		err = errors.New("changed")
	}
	if err != nil {
		b.skip[zipName] = true
		return false, nil
	}
	return true, nil
}

// errWriter marks the errors of the package's writer, to tell them from
// the errors of reading the resource.
type errWriter struct{ w io.Writer }

func (e errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil {
		err = &writeErr{err}
	}
	return n, err
}

type writeErr struct{ err error }

func (e *writeErr) Error() string { return e.err.Error() }

// finish writes the manifest copy <name>.manifest.xml and the package
// <name>.zip. The temporary ZIP is removed in any case.
func (b *pkgBuilder) finish(h *rs.Head, entries func(emit func(*rs.Entry) error) error, n int) (pkgInfo, error) {
	defer os.Remove(b.tmp.Name())
	info := pkgInfo{Name: b.name, Bitstreams: n}
	if err := b.zw.Close(); err != nil {
		b.tmp.Close()
		return info, fmt.Errorf("publish: package %s: %w", b.name, err)
	}
	if err := b.tmp.Close(); err != nil {
		return info, fmt.Errorf("publish: package %s: %w", b.name, err)
	}
	manifest := filepath.Join(b.dir, b.name+".manifest.xml")
	if err := writeDocSeq(manifest, h, entries); err != nil {
		return info, err
	}
	a, err := createAtomic(filepath.Join(b.dir, b.name+".zip"), true)
	if err != nil {
		return info, err
	}
	err = b.writeZip(a, manifest, h)
	if err == nil {
		err = a.finish()
	}
	if err != nil {
		a.abort()
		return info, err
	}
	length, sum := a.digest()
	info.Length, info.SHA256 = length, hex.EncodeToString(sum)
	return info, a.commit()
}

func (b *pkgBuilder) writeZip(w io.Writer, manifest string, h *rs.Head) error {
	zw := zip.NewWriter(w)
	mod := h.MD.At.Time()
	if mod.IsZero() {
		mod = h.MD.Until.Time()
	}
	mw, err := zw.CreateHeader(&zip.FileHeader{Name: "manifest.xml", Method: zip.Store, Modified: mod})
	if err != nil {
		return fmt.Errorf("publish: package %s: %w", b.name, err)
	}
	mf, err := os.Open(manifest)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	_, err = io.CopyBuffer(mw, mf, b.buf)
	mf.Close()
	if err != nil {
		return fmt.Errorf("publish: package %s: %w", b.name, err)
	}
	zr, err := zip.OpenReader(b.tmp.Name())
	if err != nil {
		return fmt.Errorf("publish: package %s: %w", b.name, err)
	}
	defer zr.Close()
	for _, f := range zr.File {
		if b.skip[f.Name] {
			continue
		}
		if err := zw.Copy(f); err != nil {
			return fmt.Errorf("publish: package %s: %w", b.name, err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("publish: package %s: %w", b.name, err)
	}
	return nil
}

// abort removes the temporary ZIP.
func (b *pkgBuilder) abort() {
	b.tmp.Close()
	os.Remove(b.tmp.Name())
}

// dumpEntry returns the Resource Dump or Change Dump entry of a package.
func (p *publisher) dumpEntry(rel string, pk *pkgInfo) rs.Entry {
	return rs.Entry{Loc: p.url(rel + ".zip"),
		MD: rs.Metadata{Type: zipType, Length: pk.Length, HasLength: true,
			Hashes: rs.Hashes{{Alg: rs.SHA256, Value: pk.SHA256}}},
		Links: []rs.Link{{Rel: rs.RelContents, Href: p.url(rel + ".manifest.xml"), Type: "application/xml"}}}
}

// resourceDump writes a new Resource Dump when the inventory changed since
// the last one and that one is at least DumpInterval old (or there is
// none). Packages go to a new generation directory, the Resource Dump
// document is renamed into place after them, and older generations are
// removed last.
func (p *publisher) resourceDump(ctx context.Context, s *Set, sr *SetReport) error {
	var old rdState
	had, err := getMeta(ctx, s.Store, metaResourceDump, &old)
	if err != nil {
		return err
	}
	var rl rlState
	if _, err := getMeta(ctx, s.Store, metaResourceList, &rl); err != nil {
		return err
	}
	gensRel := setDoc(s.Name, "resourcedumps")
	if had && old.complete(p, gensRel) &&
		(old.Fingerprint == rl.Fingerprint || p.now.Sub(old.At) < p.cfg.DumpInterval) {
		// The published document may be a killed run's: write the one
		// the meta describes before removing what it does not name.
		if err := p.writeResourceDumpDoc(s, &old); err != nil {
			return err
		}
		return removeExcept(p.file(gensRel), map[string]bool{old.Gen: true})
	}
	// Spool the snapshot so that no read transaction stays open while
	// the files are read.
	if err := os.MkdirAll(p.file(gensRel), dirPerm); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	spool, err := os.CreateTemp(p.file(gensRel), tmpPrefix+"dump-spool-*")
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	defer func() { spool.Close(); os.Remove(spool.Name()) }()
	// Seeded as the Resource List's, which the next run compares it with.
	fp := newFingerprint(p.cfg.BaseURL, s.ResourceBase, fmt.Sprint(p.cfg.MaxEntries, p.cfg.Archives))
	enc := gob.NewEncoder(spool)
	n := 0
	for r, err := range s.Store.Resources(ctx) {
		if err != nil {
			return fmt.Errorf("resource dump: %w", err)
		}
		fp.add(&r)
		if err := enc.Encode(&r); err != nil {
			return fmt.Errorf("resource dump: spool: %w", err)
		}
		n++
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("resource dump: spool: %w", err)
	}
	at := p.now
	gen := compact(at)
	for i := 1; gen == old.Gen || exists(p.file(gensRel+"/"+gen)); i++ {
		gen = fmt.Sprintf("%s-%d", compact(at), i)
	}
	genRel := gensRel + "/" + gen
	dir := p.file(genRel)
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	st := rdState{Fingerprint: fp.sum(), At: at, Gen: gen}
	mhead := rs.Head{MD: rs.Metadata{Capability: rs.CapResourceDumpManifest, At: rs.NewTime(at)},
		Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)}}}
	var (
		b     *pkgBuilder
		batch []store.Resource
	)
	flush := func() error {
		name := fmt.Sprintf("part-%05d", len(st.Parts)+1)
		info, err := b.finish(&mhead, func(emit func(*rs.Entry) error) error {
			for i := range batch {
				e := resourceEntry(s, &batch[i])
				e.MD.Path = "/resources/" + scan.EscapePath(batch[i].Path)
				if err := emit(&e); err != nil {
					return err
				}
			}
			return nil
		}, len(batch))
		b = nil
		if err != nil {
			return err
		}
		info.Name = name
		st.Parts = append(st.Parts, info)
		sr.DumpBytes += info.Length
		batch = batch[:0]
		return nil
	}
	dec := gob.NewDecoder(spool)
	for range n {
		if err := ctx.Err(); err != nil {
			if b != nil {
				b.abort()
			}
			return err
		}
		var r store.Resource
		if err := dec.Decode(&r); err != nil {
			return fmt.Errorf("resource dump: spool: %w", err)
		}
		if !safePath(r.Path) {
			p.log.Warn("publish: dump: resource left out: unsafe path", "path", r.Path)
			sr.SkippedBitstreams++
			continue
		}
		if b != nil && len(batch) > 0 && (b.count >= p.cfg.MaxEntries || b.bytes+r.Size > p.cfg.DumpPartBytes) {
			if err := flush(); err != nil {
				return err
			}
		}
		if b == nil {
			if b, err = p.newPkg(dir, fmt.Sprintf("part-%05d", len(st.Parts)+1)); err != nil {
				return err
			}
		}
		ok, err := b.add(filepath.Join(s.Dir, filepath.FromSlash(r.Path)), "resources/"+scan.EscapePath(r.Path), &r)
		if err != nil {
			b.abort()
			return err
		}
		if !ok {
			sr.SkippedBitstreams++
			continue
		}
		batch = append(batch, r)
	}
	switch {
	case b != nil && len(batch) == 0:
		b.abort()
	case b != nil:
		if err := flush(); err != nil {
			return err
		}
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
	return removeExcept(p.file(gensRel), map[string]bool{gen: true})
}

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
	return writeDocSeq(p.file(setDoc(s.Name, "resourcedump.xml")), &h, func(emit func(*rs.Entry) error) error {
		for i := range st.Parts {
			e := p.dumpEntry(genRel+"/"+st.Parts[i].Name, &st.Parts[i])
			e.MD.At = at
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

// changeDump writes the package of closed list l: a bitstream per created
// or updated record whose resource still has the bytes the record names.
func (p *publisher) changeDump(ctx context.Context, s *Set, l *clList, sr *SetReport) (pkgInfo, error) {
	b, err := p.newPkg(p.file(setDoc(s.Name, "changedumps")), l.name())
	if err != nil {
		return pkgInfo{}, err
	}
	var kept []store.Change
	err = journalRange(ctx, s.Store, l.First, l.Next-1, func(c *store.Change) error {
		if c.Kind == rs.Deleted {
			kept = append(kept, *c)
			return nil
		}
		if !safePath(c.Path()) {
			p.log.Warn("publish: change dump: bitstream left out: unsafe path", "path", c.Path())
			sr.SkippedBitstreams++
			return nil
		}
		ok, err := b.add(filepath.Join(s.Dir, filepath.FromSlash(c.Path())), cdPath(c)[1:], &c.Resource)
		if err != nil {
			return err
		}
		if !ok {
			sr.SkippedBitstreams++
			return nil
		}
		kept = append(kept, *c)
		return nil
	})
	if err != nil {
		b.abort()
		return pkgInfo{}, fmt.Errorf("change dump %s: %w", l.name(), err)
	}
	h := rs.Head{MD: rs.Metadata{Capability: rs.CapChangeDumpManifest, From: rs.NewTime(l.From), Until: rs.NewTime(l.Until)},
		Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)}}}
	info, err := b.finish(&h, func(emit func(*rs.Entry) error) error {
		for i := range kept {
			e := changeEntry(s, &kept[i])
			if kept[i].Kind != rs.Deleted {
				e.MD.Path = cdPath(&kept[i])
			}
			if err := emit(&e); err != nil {
				return err
			}
		}
		return nil
	}, len(kept))
	info.From, info.Until = l.From, l.Until
	return info, err
}

// cdPath is the manifest path of a change's bitstream: one directory per
// journal record, so that several changes of one resource do not collide.
func cdPath(c *store.Change) string {
	return fmt.Sprintf("/changes/%d/%s", c.Seq, scan.EscapePath(c.Path()))
}
