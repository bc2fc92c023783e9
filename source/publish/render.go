package publish

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/resourcesync-go/resourcesync/rs"
	"github.com/resourcesync-go/resourcesync/source/store"
)

// Rendering on replicas (Config.Replicas, Set.Follow).
//
// Several processes serve one set from one shared store, each from its own
// Out. One of them, the leader, scans and runs Publish, which decides
// everything that depends on the clock or on the process (the Resource
// List's at and part table, the Change List boundaries, the open list's
// last record) and records it in the meta. Every other process renders its
// documents from that meta and the store alone, so that all of them serve
// the same bytes:
//
//   - Resource List parts are rendered from their key range of the
//     inventory and kept only if their sha-256 is the one the leader
//     recorded. The inventory may have moved on since (the leader's next
//     scan): the render is then "behind" (SetReport.Behind), keeps the
//     documents it had and is retried after the leader's next Publish;
//   - the index (or single list) is checked against the recorded sha-256
//     of resourcelist.xml;
//   - Change Lists are rendered from the journal, whose records never
//     change, between the recorded boundaries;
//   - the Capability List, the Source Description and robots.txt depend
//     on the configuration only.
//
// A render whose meta did not change since the last render or Publish of
// this process for the same Out has nothing to do. What a Publish records
// for that is the meta its own documents were written from, never the
// meta read back afterwards: a leader that lost its role during the run
// may find its successor's there.

// rendered is what this process last wrote of a set into one Out.
type rendered struct {
	rl, cl   []byte // the meta values the tree holds
	closedOK int    // closed Change Lists known written in their closed form
}

var renderCache sync.Map // Out + "\x00" + set -> *rendered; guarded by lockOut

func (p *publisher) cacheKey(s *Set) string {
	out := p.cfg.Out
	if abs, err := filepath.Abs(out); err == nil {
		out = abs
	}
	return out + "\x00" + s.Name
}

func rawMeta(ctx context.Context, st store.Store, key string) ([]byte, error) {
	b, err := st.GetMeta(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("meta %s: %w", key, err)
	}
	return b, nil
}

// hold records that this run's documents of set s are written from (or
// were found to be) the meta value raw of key.
func (p *publisher) hold(s *Set, key string, raw []byte) {
	if p.held == nil {
		p.held = map[string][]byte{}
	}
	p.held[s.Name+"\x00"+key] = raw
}

// remember records that the tree holds the meta values this run wrote its
// documents from (after a Publish by the leader). Not the set's meta as
// read now: a leader whose role passed to another replica during the run
// may find its successor's meta there already, which its tree does not
// hold; taken for this tree's, a render would find nothing to do (until
// the meta changes again) and this replica would serve other bytes than
// the rest.
func (p *publisher) remember(s *Set, closed int) {
	rl, okRL := p.held[s.Name+"\x00"+metaResourceList]
	cl, okCL := p.held[s.Name+"\x00"+metaChangeLists]
	if !okRL || !okCL || rl == nil || cl == nil {
		// Not known: the next render compares the files with the meta.
		renderCache.Delete(p.cacheKey(s))
		return
	}
	renderCache.Store(p.cacheKey(s), &rendered{rl: rl, cl: cl, closedOK: closed})
}

// closedKnown returns how many of the set's closed Change Lists this
// process knows to be written in their closed form in Out, -1 if it does
// not know (it has neither published nor rendered the set yet).
func (p *publisher) closedKnown(s *Set) int {
	if v, ok := renderCache.Load(p.cacheKey(s)); ok {
		return v.(*rendered).closedOK
	}
	return -1
}

// renderedAll reports whether every set is followed and this Out already
// holds what each set's meta describes.
func (p *publisher) renderedAll(ctx context.Context) (bool, error) {
	if !p.cfg.Replicas {
		return false, nil
	}
	for i := range p.cfg.Sets {
		s := &p.cfg.Sets[i]
		if !s.Follow {
			return false, nil
		}
		v, ok := renderCache.Load(p.cacheKey(s))
		if !ok {
			return false, nil
		}
		rl, err := rawMeta(ctx, s.Store, metaResourceList)
		if err != nil {
			return false, err
		}
		cl, err := rawMeta(ctx, s.Store, metaChangeLists)
		if err != nil {
			return false, err
		}
		if r := v.(*rendered); rl == nil || cl == nil || !bytes.Equal(r.rl, rl) || !bytes.Equal(r.cl, cl) {
			return false, nil
		}
	}
	return true, nil
}

// renderSet renders a followed set's documents from its meta.
func (p *publisher) renderSet(ctx context.Context, s *Set, sr *SetReport) error {
	rlRaw, err := rawMeta(ctx, s.Store, metaResourceList)
	if err != nil {
		return err
	}
	clRaw, err := rawMeta(ctx, s.Store, metaChangeLists)
	if err != nil {
		return err
	}
	if rlRaw == nil || clRaw == nil {
		// Nothing published yet: the leader's first Publish will be.
		sr.Behind = true
		return nil
	}
	var rl rlState
	var cl clState
	if err := json.Unmarshal(rlRaw, &rl); err != nil {
		return fmt.Errorf("meta %s: %w", metaResourceList, err)
	}
	if err := json.Unmarshal(clRaw, &cl); err != nil {
		return fmt.Errorf("meta %s: %w", metaChangeLists, err)
	}
	if rl.Settings != "" && rl.Settings != p.rlSettings(s) {
		// Another base URL (or resource base, or entries per list) than
		// the leader's: no render could give the same bytes, and the
		// Change Lists would name other URLs. Refuse, and say why.
		return fmt.Errorf("%w: set %s: this replica's document settings (base URL %s, resource base, entries per list) differ from those of the replica that scans: start every replica with the same --base-url and document options", ErrConfig, s.Name, p.cfg.BaseURL)
	}
	sr.Resources, sr.ResourceListParts = rl.Entries, max(len(rl.Parts), 1)
	sr.ChangeLists, sr.OpenEntries = len(cl.Closed)+1, int(max(cl.OpenLast+1, cl.Open.First)-cl.Open.First)
	key := p.cacheKey(s)
	var old rendered
	if v, ok := renderCache.Load(key); ok {
		old = *v.(*rendered)
		if bytes.Equal(old.rl, rlRaw) && bytes.Equal(old.cl, clRaw) {
			return nil
		}
	} else {
		old.closedOK = -1 // unknown: look at the files
	}
	now := rendered{closedOK: old.closedOK}

	// Change Lists first: they depend on the journal only, never behind.
	if err := p.renderChangeLists(ctx, s, &cl, old.closedOK); err != nil {
		return err
	}
	now.cl, now.closedOK = clRaw, len(cl.Closed)

	listRel := setDoc(s.Name, "resourcelist.xml")
	ok := bytes.Equal(old.rl, rlRaw)
	if !ok {
		ok, err = p.renderResourceList(ctx, s, &rl, sr)
		if err != nil {
			return err
		}
	}
	if ok {
		now.rl = rlRaw
	} else {
		sr.Behind = true
		now.rl = old.rl
	}
	if docExists(p.file(listRel)) {
		if err := p.writeCapabilityList(s, p.url(listRel)); err != nil {
			return err
		}
	}
	if ok {
		names := map[string]bool{}
		for _, pt := range rl.Parts {
			names[pt.Name+".xml"], names[pt.Name+".xml"+GzipSuffix] = true, true
		}
		gens := p.file(setDoc(s.Name, "resourcelists"))
		if err := removeExcept(gens, map[string]bool{partsDir: true}); err != nil {
			return err
		}
		if err := removeExcept(filepath.Join(gens, partsDir), names); err != nil {
			return err
		}
	}
	renderCache.Store(key, &now)
	return nil
}

// renderChangeLists writes the closed lists not known to be written in
// their closed form, the open list and the index.
func (p *publisher) renderChangeLists(ctx context.Context, s *Set, st *clState, closedOK int) error {
	for i := range st.Closed {
		l := &st.Closed[i]
		f := p.file(p.clRel(s.Name, l))
		if i < closedOK && exists(f) {
			continue
		}
		if closedOK < 0 && isClosedList(f) {
			continue
		}
		if err := p.writeChangeList(ctx, s, l, l.Next-1); err != nil {
			return err
		}
	}
	if err := p.writeChangeList(ctx, s, &st.Open, st.OpenLast); err != nil {
		return err
	}
	p.noteOpen(s, st)
	return p.writeChangeListIndex(s, st)
}

// isClosedList reports whether the Change List file at path exists in its
// closed form: its head (the first KiB) has an until datetime.
func isClosedList(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 1024)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	i := bytes.Index(head, []byte("<rs:md "))
	if i < 0 {
		return false
	}
	j := bytes.IndexByte(head[i:], '>')
	return j > 0 && bytes.Contains(head[i:i+j], []byte(" until=\""))
}

// renderResourceList renders the Resource List the meta describes. It
// reports false when the inventory no longer yields the recorded bytes
// (the leader has scanned since); the published list is then left as it
// was.
func (p *publisher) renderResourceList(ctx context.Context, s *Set, st *rlState, sr *SetReport) (bool, error) {
	listRel := setDoc(s.Name, "resourcelist.xml")
	partsRel := setDoc(s.Name, "resourcelists/"+partsDir)
	up := rs.Link{Rel: rs.RelUp, Href: p.capListURL(s.Name)}
	md := rs.Metadata{Capability: rs.CapResourceList, At: rs.NewTime(st.At)}
	if fileSHA(p.file(listRel)) == st.TopSHA {
		all := true
		for _, pt := range st.Parts {
			all = all && docExists(p.file(partsRel+"/"+pt.Name+".xml"))
		}
		if all {
			return true, nil
		}
	}
	if len(st.Parts) == 0 {
		return p.renderRange(ctx, s, p.file(listRel), &rs.Head{MD: md, Links: []rs.Link{up}}, "", "", int(st.Entries), st.TopSHA, p.cfg.GzipLists)
	}
	head := rs.Head{MD: md, Links: []rs.Link{up, {Rel: rs.RelIndex, Href: p.url(listRel)}}}
	for i, pt := range st.Parts {
		f := p.file(partsRel + "/" + pt.Name + ".xml")
		if docExists(f) {
			continue // part names are never reused
		}
		to := ""
		if i+1 < len(st.Parts) {
			to = st.Parts[i+1].First
		}
		head.MD.At = rs.NewTime(pt.At)
		ok, err := p.renderRange(ctx, s, f, &head, pt.First, to, pt.Count, pt.SHA, p.cfg.GzipLists)
		if err != nil || !ok {
			return ok, err
		}
		sr.PartsWritten++
	}
	a, err := createAtomic(p.file(listRel), true)
	if err != nil {
		return false, err
	}
	h := rs.Head{Root: rs.SitemapIndex, MD: md, Links: []rs.Link{up}}
	err = encodeDoc(a, listRel, &h, func(emit func(*rs.Entry) error) error {
		for _, pt := range st.Parts {
			e := rs.Entry{Loc: p.url(partsRel + "/" + pt.Name + ".xml"), MD: rs.Metadata{At: rs.NewTime(pt.At)}}
			if err := emit(&e); err != nil {
				return err
			}
		}
		return nil
	})
	return p.keepIf(a, err, st.TopSHA)
}

// renderRange writes the inventory's records in [from, to) as one
// document at path, kept only if it has count entries and the sha-256 sha
// (when recorded; of the document's bytes, also when gz stores them
// compressed).
func (p *publisher) renderRange(ctx context.Context, s *Set, path string, h *rs.Head, from, to string, count int, sha string, gz bool) (bool, error) {
	a, err := createAtomicGz(path, true, gz)
	if err != nil {
		return false, err
	}
	n := 0
	err = encodeDoc(a, path, h, func(emit func(*rs.Entry) error) error {
		for r, err := range s.Store.ResourcesIn(ctx, from, to) {
			if err != nil {
				return err
			}
			e := resourceEntry(s, &r)
			if err := emit(&e); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err == nil && n != count {
		a.abort()
		return false, nil
	}
	return p.keepIf(a, err, sha)
}

// keepIf commits a when it was written without error and its sha-256 is
// sha (or sha is empty), and discards it otherwise.
func (p *publisher) keepIf(a *atomicFile, err error, sha string) (bool, error) {
	if err != nil {
		a.abort()
		return false, err
	}
	if err := a.finish(); err != nil {
		a.abort()
		return false, err
	}
	if _, sum := a.digest(); sha != "" && fmt.Sprintf("%x", sum) != sha {
		a.abort()
		return false, nil
	}
	return true, a.commit()
}
