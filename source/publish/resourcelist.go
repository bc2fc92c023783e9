package publish

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"
	"time"

	"github.com/resourcesync-go/resourcesync/internal/store"
	"github.com/resourcesync-go/resourcesync/rs"
)

const metaResourceList = "publish.resourcelist"

// rlState is what Publish remembers of the published Resource List.
type rlState struct {
	Fingerprint string    // of the inventory and the settings that shape the list
	At          time.Time // the list's at
	Gen         string    // generation directory of the parts, "" when not split
	Entries     int64
	Parts       int
	Archive     []rlGen `json:",omitempty"` // previous generations named by the archive, oldest first
	TopSHA      string  // sha-256 of resourcelist.xml as written
}

// fileSHA returns the hex sha-256 of the file's bytes, "" if it cannot be
// read.
func fileSHA(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
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

func (f *fingerprint) add(r *store.Resource) {
	f.str(r.Path)
	b := binary.AppendVarint(f.buf[:0], r.Size)
	b = append(b, r.MD5[:]...)
	b = append(b, r.SHA256[:]...)
	b = binary.AppendVarint(b, r.LastMod.UnixNano())
	f.buf = b
	f.h.Write(b)
	f.str(r.Type)
}

func (f *fingerprint) sum() string { return hex.EncodeToString(f.h.Sum(nil)) }

// pendingFile is a complete document waiting to be renamed into place.
type pendingFile struct{ *atomicFile }

func (p pendingFile) Close() error { return p.finish() }

// pendingSet collects the files a Splitter writes, to rename them in order
// once the whole document is complete.
type pendingSet struct {
	p     *publisher
	files []*atomicFile
}

func (ps *pendingSet) create(url string) (io.WriteCloser, error) {
	rel, ok := strings.CutPrefix(url, ps.p.cfg.BaseURL)
	if !ok {
		return nil, fmt.Errorf("publish: URL %s outside the base URL", url)
	}
	a, err := createAtomic(ps.p.file(rel), false)
	if err != nil {
		return nil, err
	}
	ps.files = append(ps.files, a)
	return pendingFile{a}, nil
}

// commit renames the files in the order they were written: parts before
// the index that names them.
func (ps *pendingSet) commit() error {
	for i, a := range ps.files {
		if err := a.commit(); err != nil {
			for _, b := range ps.files[i+1:] {
				b.abort()
			}
			return err
		}
	}
	return nil
}

func (ps *pendingSet) abort() {
	for _, a := range ps.files {
		a.abort()
	}
}

// rlGen is an archived Resource List generation.
type rlGen struct {
	Gen string
	At  time.Time
}

// resourceList writes the set's Resource List (or Resource List Index and
// its parts) from one snapshot of the inventory, unless the inventory is
// unchanged since the published one. It returns the URL the Capability
// List names.
//
// Without Archives the list (or index) is at resourcelist.xml and the
// parts of a split list in a generation directory. With Archives every
// generation is self-contained in its directory
// (resourcelists/<at>/resourcelist.xml and its parts), the Capability List
// names the current generation's document, resourcelist.xml is a copy of
// it for robots.txt, and the Resource List Archive names the previous
// ArchivedResourceLists generations, which are kept.
func (p *publisher) resourceList(ctx context.Context, s *Set, sr *SetReport) (string, func() error, error) {
	var old rlState
	had, err := getMeta(ctx, s.Store, metaResourceList, &old)
	if err != nil {
		return "", nil, err
	}
	archive := p.cfg.Archives
	listRel := setDoc(s.Name, "resourcelist.xml")
	gensRel := setDoc(s.Name, "resourcelists")
	genDoc := func(gen string) string {
		if archive {
			return gensRel + "/" + gen + "/resourcelist.xml"
		}
		return listRel
	}
	keep := func(st *rlState) map[string]bool {
		k := map[string]bool{}
		if st.Gen != "" {
			k[st.Gen] = true
		}
		for _, g := range st.Archive {
			k[g.Gen] = true
		}
		return k
	}
	// Unchanged only if the published document is the one the meta
	// describes (a killed run may have replaced it before its meta) and a
	// pass over the inventory (much cheaper than encoding it) finds the
	// same fingerprint.
	if had && old.TopSHA != "" && old.TopSHA == fileSHA(p.file(listRel)) &&
		(old.Gen == "" || exists(p.file(gensRel+"/"+old.Gen))) && exists(p.file(genDoc(old.Gen))) {
		fp := newFingerprint(p.cfg.BaseURL, s.ResourceBase, fmt.Sprint(p.cfg.MaxEntries, archive))
		for r, err := range s.Store.Resources(ctx) {
			if err != nil {
				return "", nil, fmt.Errorf("resource list: %w", err)
			}
			fp.add(&r)
		}
		if fp.sum() == old.Fingerprint {
			sr.Resources, sr.ResourceListParts = old.Entries, old.Parts
			if archive {
				if err := p.writeResourceListArchive(s, old.Archive, genDoc); err != nil {
					return "", nil, err
				}
			}
			return p.url(genDoc(old.Gen)), func() error { return removeExcept(p.file(gensRel), keep(&old)) }, nil
		}
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
		if ss, err := s.Store.Stats(ctx); err != nil {
			return "", nil, fmt.Errorf("resource list: %w", err)
		} else if ok && ss.LastSeq == 0 && !bt.After(at) {
			at = bt
		}
	}
	gen := compact(at)
	for i := 1; gen == old.Gen || exists(p.file(gensRel+"/"+gen)); i++ {
		gen = fmt.Sprintf("%s-%d", compact(at), i)
	}
	ps := &pendingSet{p: p}
	sp, err := rs.NewSplitter(rs.SplitConfig{
		Head: rs.Head{MD: rs.Metadata{Capability: rs.CapResourceList, At: rs.NewTime(at)},
			Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)}}},
		URL: p.url(genDoc(gen)),
		PartURL: func(n int) string {
			return p.url(fmt.Sprintf("%s/%s/part-%05d.xml", gensRel, gen, n))
		},
		Create:     ps.create,
		MaxEntries: p.cfg.MaxEntries,
		TempDir:    p.spoolDir(),
	})
	if err != nil {
		return "", nil, fmt.Errorf("resource list: %w", err)
	}
	fp := newFingerprint(p.cfg.BaseURL, s.ResourceBase, fmt.Sprint(p.cfg.MaxEntries, archive))
	var e rs.Entry
	for r, err := range s.Store.Resources(ctx) {
		if err != nil {
			sp.Close()
			ps.abort()
			return "", nil, fmt.Errorf("resource list: %w", err)
		}
		fp.add(&r)
		e = resourceEntry(s, &r)
		if err := sp.Add(&e); err != nil {
			sp.Close()
			ps.abort()
			return "", nil, fmt.Errorf("resource list: %w", err)
		}
	}
	res, err := sp.Close()
	if err != nil {
		ps.abort()
		return "", nil, fmt.Errorf("resource list: %w", err)
	}
	st := rlState{Fingerprint: fp.sum(), At: at, Entries: res.Entries, Parts: res.Parts}
	if res.Indexed || archive {
		st.Gen = gen
	}
	if err := ps.commit(); err != nil {
		return "", nil, fmt.Errorf("resource list: %w", err)
	}
	if archive {
		// The stable copy for robots.txt, then the archive naming the
		// previous generations (kept, so they still exist).
		if err := copyAtomic(p.file(genDoc(gen)), p.file(listRel)); err != nil {
			return "", nil, err
		}
		st.Archive = old.Archive
		if had && old.Gen != "" && exists(p.file(genDoc(old.Gen))) {
			st.Archive = append(st.Archive, rlGen{Gen: old.Gen, At: old.At})
		}
		if n := len(st.Archive) - p.cfg.ArchivedResourceLists; n > 0 {
			st.Archive = st.Archive[n:]
		}
		if err := p.writeResourceListArchive(s, st.Archive, genDoc); err != nil {
			return "", nil, err
		}
	}
	st.TopSHA = fileSHA(p.file(listRel))
	if err := putMeta(ctx, s.Store, metaResourceList, st); err != nil {
		return "", nil, err
	}
	sr.Resources, sr.ResourceListParts, sr.ResourceList = st.Entries, st.Parts, true
	p.log.Info("publish: resource list", "set", s.Name, "entries", st.Entries, "parts", st.Parts)
	// Other generations are removed once the Capability List names the
	// new one: in archive mode the published Capability List may still
	// name a generation that a killed run already dropped from the meta.
	return p.url(genDoc(gen)), func() error { return removeExcept(p.file(gensRel), keep(&st)) }, nil
}

// writeResourceListArchive writes the Resource List Archive: one entry per
// archived generation, oldest first, with its at.
func (p *publisher) writeResourceListArchive(s *Set, gens []rlGen, doc func(string) string) error {
	h := rs.Head{MD: rs.Metadata{Capability: rs.CapResourceListArchive},
		Links: []rs.Link{{Rel: rs.RelUp, Href: p.capListURL(s.Name)}}}
	return writeDocSeq(p.file(setDoc(s.Name, "resourcelist-archive.xml")), &h, func(emit func(*rs.Entry) error) error {
		for _, g := range gens {
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
