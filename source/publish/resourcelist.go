package publish

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
)

const metaResourceList = "publish.resourcelist"

// rlState is what Publish remembers of the published Resource List.
type rlState struct {
	Settings string      // fingerprint of the settings and layout that shape the documents
	Version  dumpVersion // the state of the collection the list describes
	At       time.Time   // the list's at
	Gen      string      // Archives: generation directory of the list or index document
	Entries  int64
	// Parts is the part table of a split list, in key order; none for one
	// document. (Its key is not "Parts", which held a count in the
	// fingerprint-based format: either version reads the other's meta and
	// then makes a full write.)
	Parts   []rlPart `json:"PartTable,omitempty"`
	Archive []rlGen  `json:",omitempty"` // previous generations named by the archive, oldest first
	TopSHA  string   // sha-256 of resourcelist.xml as written
}

// fileSHA returns the hex sha-256 of the document's bytes at path (plain,
// or else decoded from path+GzipSuffix), "" if it cannot be read.
func fileSHA(path string) string {
	var r io.Reader
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		if f, err = os.Open(path + GzipSuffix); err == nil {
			defer f.Close()
			zr, zerr := gzip.NewReader(f)
			if zerr != nil {
				return ""
			}
			r = zr
		}
	} else if err == nil {
		defer f.Close()
		r = f
	}
	if err != nil {
		return ""
	}
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fingerprint hashes everything a Resource List entry is made of, so that
// an unchanged inventory is recognised without comparing documents.
type fingerprint struct {
	h   hash.Hash
	buf []byte
}

func newFingerprint(parts ...string) *fingerprint {
	f := &fingerprint{h: sha256.New()}
	for _, s := range parts {
		f.str(s)
	}
	return f
}

func (f *fingerprint) str(s string) {
	f.buf = binary.AppendUvarint(f.buf[:0], uint64(len(s)))
	f.buf = append(f.buf, s...)
	f.h.Write(f.buf)
}

func (f *fingerprint) sum() string { return hex.EncodeToString(f.h.Sum(nil)) }

// rlGen is an archived Resource List generation.
type rlGen struct {
	Gen   string
	At    time.Time
	Parts []string `json:",omitempty"` // file names (in resourcelists/parts) its index names
}

// rlPart is one part of a split Resource List: the inventory's paths from
// First (inclusive) up to the next part's First. The first part's First
// is "". Part files are never rewritten in place: a changed part gets a
// new file name, so a document that names the old one (the published
// index until it is replaced, an archived index) stays valid.
type rlPart struct {
	First string
	Count int
	Name  string    // file name in resourcelists/parts
	At    time.Time // the part's at: when it was written (it is accurate since)
	// SHA is the hex sha-256 of the part file (Config.Replicas only): a
	// replica renders the part from the inventory and keeps it only if
	// its bytes are these.
	SHA string `json:",omitempty"`
}

const partsDir = "parts" // in resourcelists/

// rlLayout is the version of the layout the settings fingerprint names:
// a state published with another layout gets a full write.
const rlLayout = "parts-v2"

func (p *publisher) rlSettings(s *Set) string {
	return newFingerprint(rlLayout, p.cfg.BaseURL, s.ResourceBase, fmt.Sprint(p.cfg.MaxEntries, p.cfg.Archives)).sum()
}

// partFor returns the index of the part whose key range holds path.
func partFor(parts []rlPart, path string) int {
	i := sort.Search(len(parts), func(i int) bool { return parts[i].First > path })
	return max(i-1, 0)
}

// maxPartBytes: a part is cut before it can exceed a document's size limit
// (an entry is far smaller than the margin).
const maxPartBytes = rs.DefaultMaxBytes - 1<<20

// resourceList writes the set's Resource List unless the collection is
// unchanged since the published one. It returns the URL the Capability
// List names: resourcelist.xml, the list or (once it has more than
// MaxEntries entries) the Resource List Index.
//
// A split list is kept as a table of parts by key range in the meta. An
// update rewrites only the parts whose range holds a path of a journal
// record since the published list (split in even halves when a part
// outgrows MaxEntries, merged into a neighbour when it shrinks below a
// quarter), under new file names, then the index, whose at is the time of
// the run: an unchanged part is still accurate then, and keeps its own at.
// A state without a part table, other settings, a changed baseline, a
// journal that no longer reaches back to the published list, or a
// published index that is not the one the meta describes (a killed run)
// gets a full write.
//
// With Archives every index (or single list) also goes to
// resourcelists/<gen>/resourcelist.xml, which the Resource List Archive
// names once a later one replaces it; parts are shared by the indexes
// that name them and kept while one of them is kept.
func (p *publisher) resourceList(ctx context.Context, s *Set, sr *SetReport) (string, func() error, error) {
	var old rlState
	oldRaw, err := getMetaRaw(ctx, s.Store, metaResourceList, &old)
	if err != nil {
		return "", nil, err
	}
	had := oldRaw != nil
	archive := p.cfg.Archives
	listRel := setDoc(s.Name, "resourcelist.xml")
	gensRel := setDoc(s.Name, "resourcelists")
	partsRel := gensRel + "/" + partsDir
	genDoc := func(gen string) string {
		if archive && gen != "" {
			return gensRel + "/" + gen + "/resourcelist.xml"
		}
		return listRel
	}
	cleanup := func(st *rlState) func() error {
		return func() error {
			keep := map[string]bool{partsDir: true} // generations: a handful
			names := map[string]bool{}              // parts of the kept indexes: a few per million resources
			if st.Gen != "" {
				keep[st.Gen] = true
			}
			for _, pt := range st.Parts {
				names[pt.Name+".xml"], names[pt.Name+".xml"+GzipSuffix] = true, true
			}
			for _, g := range st.Archive {
				keep[g.Gen] = true
				for _, n := range g.Parts {
					names[n+".xml"], names[n+".xml"+GzipSuffix] = true, true
				}
			}
			if err := removeExcept(p.file(gensRel), keep); err != nil {
				return err
			}
			return removeExcept(p.file(partsRel), names)
		}
	}
	ver, err := currentVersion(ctx, s.Store)
	if err != nil {
		return "", nil, fmt.Errorf("resource list: %w", err)
	}
	settings := p.rlSettings(s)
	// The published documents are the ones the meta describes (a killed
	// run may have replaced resourcelist.xml before its meta)?
	valid := had && old.Settings == settings && old.TopSHA != "" && old.TopSHA == fileSHA(p.file(listRel)) &&
		docExists(p.file(genDoc(old.Gen)))
	for i := 0; valid && i < len(old.Parts); i++ {
		valid = docExists(p.file(partsRel + "/" + old.Parts[i].Name + ".xml"))
	}
	if valid && old.Version == ver {
		p.hold(s, metaResourceList, oldRaw)
		sr.Resources, sr.ResourceListParts = old.Entries, max(len(old.Parts), 1)
		if archive {
			if err := p.writeResourceListArchive(s, old.Archive, genDoc); err != nil {
				return "", nil, err
			}
		}
		return p.url(listRel), cleanup(&old), nil
	}
	at := p.now
	if !had {
		// The first Resource List of a set whose journal is still empty
		// describes the baseline: at is the baseline's datetime, which is
		// where the first Change List starts.
		bt, ok, err := store.BaselineTime(ctx, s.Store)
		if err != nil {
			return "", nil, fmt.Errorf("resource list: %w", err)
		}
		if ok && ver.Seq == 0 && !bt.After(at) {
			at = bt
		}
	}
	gen := ""
	if archive {
		gen = compact(at)
		for i := 1; gen == old.Gen || exists(p.file(gensRel+"/"+gen)); i++ {
			gen = fmt.Sprintf("%s-%d", compact(at), i)
		}
	}
	w := &partWriter{p: p, s: s, at: at, dir: p.file(partsRel), partsURL: p.url(partsRel) + "/",
		head: rs.Head{MD: rs.Metadata{Capability: rs.CapResourceList, At: rs.NewTime(at)},
			Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)}, {Rel: rs.RelIndex, Href: p.url(listRel)}}}}
	var parts []rlPart
	single := false
	incremental := false
	if valid && len(old.Parts) > 0 && old.Version.Baseline == ver.Baseline && ver.Seq >= old.Version.Seq {
		parts, incremental, err = p.updateParts(ctx, s, &old, ver, w)
		if err != nil {
			w.abort()
			return "", nil, err
		}
	}
	if !incremental {
		if ver.Count <= p.cfg.MaxEntries {
			// One document: written whole, it is small.
			single, err = w.single(ctx, p.file(genDoc(gen)), &rs.Head{MD: w.head.MD, Links: w.head.Links[:1]})
			if err != nil {
				return "", nil, err
			}
		}
		if !single {
			parts, err = w.run(ctx, "", "", p.cfg.MaxEntries)
			if err != nil {
				w.abort()
				return "", nil, err
			}
		}
	}
	st := rlState{Settings: settings, Version: ver, At: at, Gen: gen, Parts: parts}
	if single {
		st.Entries = w.entries
	} else {
		for _, pt := range parts {
			st.Entries += int64(pt.Count)
		}
		if err := p.writeResourceListIndex(s, p.file(genDoc(gen)), at, parts, partsRel); err != nil {
			return "", nil, err
		}
	}
	if archive {
		// The stable copy (the URL the Capability List and robots.txt
		// name, and the parts' rel="index"), then the archive naming the
		// previous generations (kept, so they still exist).
		// A hard link where the file system has them: the two names
		// share one copy on disk (neither is ever written in place: a new
		// list is a new file renamed over the name).
		src, dst := p.file(genDoc(gen)), p.file(listRel)
		if !exists(src) {
			src, dst = src+GzipSuffix, dst+GzipSuffix // stored compressed: the link too
		}
		if err := copyAtomic(src, dst); err != nil {
			return "", nil, err
		}
		st.Archive = old.Archive
		if had && old.Gen != "" && docExists(p.file(genDoc(old.Gen))) {
			g := rlGen{Gen: old.Gen, At: old.At}
			for _, pt := range old.Parts {
				g.Parts = append(g.Parts, pt.Name)
			}
			st.Archive = append(st.Archive, g)
		}
		if n := len(st.Archive) - p.cfg.ArchivedResourceLists; n > 0 {
			st.Archive = st.Archive[n:]
		}
		if err := p.writeResourceListArchive(s, st.Archive, genDoc); err != nil {
			return "", nil, err
		}
	}
	// The file at listRel is the one single wrote (or a hard link or
	// copy of it): its sha-256 is known unless no stream hashed it.
	if st.TopSHA = w.sha; !single || st.TopSHA == "" {
		st.TopSHA = fileSHA(p.file(listRel))
	}
	raw, err := putMetaRaw(ctx, s.Store, metaResourceList, st)
	if err != nil {
		return "", nil, err
	}
	p.hold(s, metaResourceList, raw)
	sr.Resources, sr.ResourceListParts, sr.ResourceList = st.Entries, max(len(st.Parts), 1), true
	sr.PartsWritten = w.written
	if single {
		sr.PartsWritten = 1
	}
	p.log.Info("publish: resource list", "set", s.Name, "entries", st.Entries, "parts", len(st.Parts),
		"written", sr.PartsWritten, "incremental", incremental)
	// Part files and generations no longer named are removed once the
	// Capability List is rewritten.
	return p.url(listRel), cleanup(&st), nil
}

// updateParts rewrites the parts whose key range holds a path of a journal
// record after old.Version.Seq, and returns the new part table. It reports
// false (having written nothing) when a full write is the better choice:
// the journal does not reach back, most parts changed, or the list fits
// one document again.
func (p *publisher) updateParts(ctx context.Context, s *Set, old *rlState, ver dumpVersion, w *partWriter) ([]rlPart, bool, error) {
	parts := old.Parts
	ss, err := s.Store.Stats(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("resource list: %w", err)
	}
	if ver.Seq == old.Version.Seq || ss.FirstSeq > old.Version.Seq+1 {
		// The inventory changed without a journal record (the version
		// differs in its baseline or count), or records were pruned.
		return nil, false, nil
	}
	dirty := make([]bool, len(parts)) // one flag per part: memory follows the parts, not the changes
	delta := make([]int, len(parts))
	ndirty, total := 0, old.Entries
	for c, err := range s.Store.Journal(ctx, old.Version.Seq+1) {
		if err != nil {
			return nil, false, fmt.Errorf("resource list: %w", err)
		}
		if c.Seq > ver.Seq {
			break
		}
		i := partFor(parts, c.Path())
		if !dirty[i] {
			dirty[i] = true
			ndirty++
		}
		switch c.Kind {
		case rs.Created:
			delta[i]++
			total++
		case rs.Deleted:
			delta[i]--
			total--
		}
	}
	if total <= int64(p.cfg.MaxEntries) || (ndirty > 2 && ndirty*2 > len(parts)) {
		return nil, false, nil
	}
	var out []rlPart
	quarter := max(p.cfg.MaxEntries/4, 1)
	for i := 0; i < len(parts); {
		if !dirty[i] {
			out = append(out, parts[i])
			i++
			continue
		}
		// A run of dirty parts, and its estimated size (exact unless the
		// inventory moved on since ver).
		j, n := i, 0
		for ; j < len(parts) && dirty[j]; j++ {
			n += parts[j].Count + delta[j]
		}
		// Merge a small run into a clean neighbour when they fit in three
		// quarters of a part (room to grow before the next split).
		if n < quarter {
			switch {
			case j < len(parts) && n+parts[j].Count <= 3*quarter:
				n += parts[j].Count
				j++
			case len(out) > 0 && i > 0 && out[len(out)-1].Name == parts[i-1].Name && n+parts[i-1].Count <= 3*quarter:
				// (Only an unchanged neighbour: one just written by the
				// previous run covers more than parts[i-1].)
				out = out[:len(out)-1]
				i--
				n += parts[i].Count
			}
		}
		from, to := parts[i].First, ""
		if j < len(parts) {
			to = parts[j].First
		}
		// Even parts when it must split; one part (up to MaxEntries, should
		// the estimate be short) otherwise.
		target := p.cfg.MaxEntries
		if k := (n + p.cfg.MaxEntries - 1) / p.cfg.MaxEntries; k > 1 {
			target = (n + k - 1) / k
		}
		written, err := w.run(ctx, from, to, target)
		if err != nil {
			return nil, false, err
		}
		out = append(out, written...)
		i = j
	}
	if len(out) == 0 {
		return nil, false, nil
	}
	out[0].First = "" // the first part covers every path below the next one
	return out, true, nil
}

// partWriter writes Resource List parts (or the single list) from ranges
// of the inventory.
type partWriter struct {
	p        *publisher
	s        *Set
	at       time.Time
	dir      string // absolute directory of the part files
	partsURL string
	head     rs.Head
	seq      int
	written  int   // parts written
	entries  int64 // entries of the single list
	// sha is the hex sha-256 of the single list's bytes when its
	// companion stream hashed them (else ""): the file need not be read
	// back for rlState.TopSHA.
	sha  string
	done []string
}

// name returns a file name (without .xml) not in use in the parts
// directory.
func (w *partWriter) name() string {
	for {
		w.seq++
		n := fmt.Sprintf("%s-%05d", compact(w.at), w.seq)
		if !docExists(filepath.Join(w.dir, n+".xml")) {
			return n
		}
	}
}

// run writes the paths in [from, to) as parts of about target entries
// (at most MaxEntries and maxPartBytes each); every part is complete and
// renamed into place before the next is started. The first part's First
// is from, so the parts keep covering the range.
func (w *partWriter) run(ctx context.Context, from, to string, target int) ([]rlPart, error) {
	target = min(max(target, 1), w.p.cfg.MaxEntries)
	var (
		out []rlPart
		a   *atomicFile
		ds  *docStream // its companion (companion_stream.go)
		enc *rs.Encoder
		cur rlPart
	)
	finish := func() error {
		if err := enc.Close(); err != nil {
			a.abort()
			ds.abort()
			return fmt.Errorf("publish: resource list part: %w", err)
		}
		ds.done()
		if err := a.commit(); err != nil {
			return err
		}
		if a.sha != nil {
			_, sum := a.digest()
			cur.SHA = hex.EncodeToString(sum)
		}
		w.written++
		w.done = append(w.done, cur.Name)
		out = append(out, cur)
		a = nil
		return nil
	}
	first := true
	var e rs.Entry
	for r, err := range w.s.Store.ResourcesIn(ctx, from, to) {
		if err != nil {
			if a != nil {
				a.abort()
				ds.abort()
			}
			return nil, fmt.Errorf("resource list: %w", err)
		}
		if a != nil && (cur.Count >= target || enc.Written() >= maxPartBytes) {
			if err := finish(); err != nil {
				return nil, err
			}
		}
		if a == nil {
			cur = rlPart{First: r.Path, Name: w.name(), At: w.at}
			if first {
				cur.First, first = from, false
			}
			var err error
			if a, err = createAtomicGz(filepath.Join(w.dir, cur.Name+".xml"), w.p.cfg.Replicas, w.p.cfg.GzipLists); err != nil {
				return nil, err
			}
			ds = startStream(a, "", &w.head)
			enc = rs.NewEncoder(ds.writer(a))
			if err := enc.WriteHead(&w.head); err != nil {
				a.abort()
				ds.abort()
				return nil, fmt.Errorf("publish: resource list part: %w", err)
			}
		}
		e = resourceEntry(w.s, &r)
		if err := enc.WriteEntry(&e); err != nil {
			a.abort()
			ds.abort()
			return nil, fmt.Errorf("publish: resource list part: %w", err)
		}
		ds.add(&e)
		cur.Count++
	}
	if a != nil {
		if err := finish(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// single writes the whole inventory as one document at path. It reports
// false (having written nothing) when the entries do not fit in one
// document after all.
func (w *partWriter) single(ctx context.Context, path string, h *rs.Head) (bool, error) {
	a, err := createAtomicGz(path, false, w.p.cfg.GzipLists)
	if err != nil {
		return false, err
	}
	ds := startStream(a, "", h)
	enc := rs.NewEncoder(ds.writer(a))
	if err := enc.WriteHead(h); err != nil {
		a.abort()
		ds.abort()
		return false, fmt.Errorf("publish: resource list: %w", err)
	}
	var e rs.Entry
	n := 0
	for r, err := range w.s.Store.ResourcesIn(ctx, "", "") {
		if err != nil {
			a.abort()
			ds.abort()
			return false, fmt.Errorf("resource list: %w", err)
		}
		if n >= w.p.cfg.MaxEntries || enc.Written() >= maxPartBytes {
			a.abort()
			ds.abort()
			return false, nil
		}
		e = resourceEntry(w.s, &r)
		if err := enc.WriteEntry(&e); err != nil {
			a.abort()
			ds.abort()
			return false, fmt.Errorf("publish: resource list: %w", err)
		}
		ds.add(&e)
		n++
	}
	if err := enc.Close(); err != nil {
		a.abort()
		ds.abort()
		return false, fmt.Errorf("publish: resource list: %w", err)
	}
	w.entries = int64(n)
	ds.done()
	if ds != nil {
		w.sha = ds.sum
	}
	return true, a.commit()
}

// abort removes the parts written by a run that fails: no document names
// them yet.
func (w *partWriter) abort() {
	for _, n := range w.done {
		os.Remove(filepath.Join(w.dir, n+".xml"))
		os.Remove(filepath.Join(w.dir, n+".xml"+GzipSuffix))
	}
}

// writeResourceListIndex writes the Resource List Index at path: one entry
// per part, with the part's own at.
func (p *publisher) writeResourceListIndex(s *Set, path string, at time.Time, parts []rlPart, partsRel string) error {
	h := rs.Head{Root: rs.SitemapIndex, MD: rs.Metadata{Capability: rs.CapResourceList, At: rs.NewTime(at)},
		Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)}}}
	return writeDocSeq(path, &h, func(emit func(*rs.Entry) error) error {
		for _, pt := range parts {
			e := rs.Entry{Loc: p.url(partsRel + "/" + pt.Name + ".xml"), MD: rs.Metadata{At: rs.NewTime(pt.At)}}
			if err := emit(&e); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeResourceListArchive writes the Resource List Archive: one entry per
// archived generation, oldest first, with its at.
func (p *publisher) writeResourceListArchive(s *Set, gens []rlGen, doc func(string) string) error {
	h := rs.Head{MD: rs.Metadata{Capability: rs.CapResourceListArchive},
		Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)}}}
	return writeDocSeq(p.file(setDoc(s.Name, "resourcelist-archive.xml")), &h, func(emit func(*rs.Entry) error) error {
		for _, g := range gens {
			if !docExists(p.file(doc(g.Gen))) {
				// Written into another output tree (a state published
				// with `publish --out` and then served): not here to list.
				continue
			}
			e := rs.Entry{Loc: p.url(doc(g.Gen)), MD: rs.Metadata{At: rs.NewTime(g.At)}}
			if err := emit(&e); err != nil {
				return err
			}
		}
		return nil
	})
}

// copyAtomic copies the file src to dst atomically.
func copyAtomic(src, dst string) error {
	if linkAtomic(src, dst) == nil {
		return nil
	}
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	defer f.Close()
	return writeAtomic(dst, func(w io.Writer) error {
		_, err := io.Copy(w, f)
		return err
	})
}
